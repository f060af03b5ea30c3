"""Fixtures of the drift tests: a real upstream payorch process (`payorch serve`), a fresh
namespace of it per test, the test servers' loop, and `drift` (the command as a subprocess)."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from payorch_cli.client import DEFAULT_API_KEY
from tests.drift.shim import Loop

PAYORCH = [sys.executable, "-m", "payorch_cli.main"]


def call(url: str, method: str, key: str | None, body: Any = None, **headers: str) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    sent = {"Content-Type": "application/json", **headers}
    if key:
        sent["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(url, data=data, method=method, headers=sent)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            raw = response.read()
    except urllib.error.HTTPError as exc:
        raw = exc.read()
    return json.loads(raw) if raw else None


@dataclass
class World:
    """A namespace of the upstream: `base` is its prefix (`{server}/ns/NAME`)."""

    server: str
    name: str
    keys: list[dict[str, Any]]

    @property
    def base(self) -> str:
        return f"{self.server}/ns/{self.name}"

    def key(self, shop: str = "shp_mazul_tienda", env: str = "sandbox", kind: str = "secret"):
        for row in self.keys:
            if row["shopId"] == shop and row["environment"] == env:
                return row[f"{kind}Key"]
        raise KeyError(shop)


@pytest.fixture(scope="session")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data = tmp_path_factory.mktemp("upstream")
    proc = subprocess.Popen(
        # No rate limit: the bounded-memory test replays thousands of requests in a row.
        [*PAYORCH, "serve", "--port", "0", "--data-dir", str(data), "--no-rate-limit"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("Listening on "), line
    yield line.split()[-1]
    proc.terminate()
    proc.wait(15)


@pytest.fixture
def world(upstream: str) -> World:
    name = f"up-{secrets.token_hex(4)}"
    answer = call(f"{upstream}/_sim/namespaces/{name}", "PUT", DEFAULT_API_KEY)
    return World(upstream, name, answer["keys"])


@pytest.fixture(scope="session")
def loop() -> Loop:
    return Loop()


def drift(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PAYORCH, "drift", *args], capture_output=True, text=True, timeout=300, cwd=cwd
    )


def report(recording: Path, *args: str) -> tuple[int, dict[str, Any]]:
    done = drift(str(recording), "--json", *args)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)
