"""A real `payorch serve --workers N` (real processes, real nginx) and a small client for it."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from simulator.domain.placement import owner

PAYORCH = [sys.executable, "-m", "payorch_cli.main"]
DEFAULT_SK = "sk_test_19g744zrbw5buqxqpxp5w4gj"
SHOP = "shp_mazul_tienda"


def nginx_binary() -> str | None:
    return shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/sbin")


needs_nginx = pytest.mark.skipif(
    nginx_binary() is None,
    reason="nginx is not installed (apt-get install nginx-light; .ci/run installs it in CI)",
)


class Response:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


def call(
    url: str,
    method: str,
    path: str,
    key: str | None = None,
    body: Any = None,
    timeout: float = 30,
) -> Response:
    """One request, no redirects followed (pages are checked on their Location)."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    try:
        connection.request(method, path, body=data, headers=headers)
        response = connection.getresponse()
        return Response(
            response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        )
    finally:
        connection.close()


class Space:
    """A namespace as PUT answered it: its sandbox key pair of one shop."""

    def __init__(self, name: str, body: dict[str, Any]) -> None:
        self.name = name
        pair = next(
            k for k in body["keys"] if k["shopId"] == SHOP and k["environment"] == "sandbox"
        )
        self.sk, self.pk = pair["secretKey"], pair["publishableKey"]


class Cluster:
    def __init__(
        self, data_dir: Path, workers: int, *extra: str, env: dict[str, str] | None = None
    ) -> None:
        self.data_dir, self.workers = data_dir, workers
        self.proc = subprocess.Popen(
            [
                *PAYORCH,
                "serve",
                "--workers",
                str(workers),
                "--port",
                "0",
                "--data-dir",
                str(data_dir),
                *extra,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            env={**os.environ, **(env or {})},
        )
        assert self.proc.stdout is not None and self.proc.stderr is not None
        line = self.proc.stdout.readline()
        if not line.startswith("Listening on http://127.0.0.1:"):
            self.proc.kill()
            raise AssertionError(line + self.proc.stderr.read())
        self.url = line.split()[-1]
        self.port = int(self.url.rsplit(":", 1)[1])
        self.errors: list[str] = []  # the supervisor's (and workers') stderr, drained
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        self.errors.extend(self.proc.stderr)

    def error_lines(self, containing: str, timeout: float = 10) -> list[str]:
        """The stderr lines holding `containing`, waited for: the drain thread reads the pipe
        on its own time, so a line already written may not be in `errors` yet."""
        deadline = time.monotonic() + timeout
        while True:
            found = [line for line in list(self.errors) if containing in line]
            if found or time.monotonic() > deadline:
                return found
            time.sleep(0.02)

    def call(self, method: str, path: str, key: str | None = None, body: Any = None) -> Response:
        return call(self.url, method, path, key, body)

    def create(self, name: str) -> Space:
        response = self.call("PUT", f"/_sim/namespaces/{name}", DEFAULT_SK)
        assert response.status == 201, response.body
        return Space(name, response.json())

    def owner(self, name: str) -> int:
        return owner(name, self.workers)

    def worker_pids(self) -> dict[int, int]:
        """Worker index -> pid, read from the processes' command lines."""
        pids = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            marker = str(self.data_dir / "workers").encode() + b"/"
            for arg in argv:
                if arg.startswith(marker) and arg[len(marker) :].isdigit():
                    pids[int(arg[len(marker) :])] = int(entry)
        return pids

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10) -> int:
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=timeout)

    def kill(self) -> None:
        """The whole process group (the supervisor, nginx and the workers have their own
        sessions: each is signalled)."""
        pids = list(self.worker_pids().values())
        if self.proc.poll() is None:
            try:
                self.stop(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def one_per_worker(cluster: Cluster, stem: str) -> list[Space]:
    """A fresh namespace on each worker (names are tried until each worker has one), in
    worker order."""
    names: dict[int, str] = {}
    for i in range(100):
        names.setdefault(cluster.owner(f"{stem}-{i}"), f"{stem}-{i}")
        if len(names) == cluster.workers:
            break
    return [cluster.create(names[w]) for w in sorted(names)]
