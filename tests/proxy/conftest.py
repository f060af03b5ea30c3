"""Fixtures of `payorch proxy`'s tests: a real upstream `payorch serve` and a real `payorch proxy`
in front of it, each a process on a free port, driven over HTTP."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

PAYORCH = [sys.executable, "-m", "payorch_cli.main"]
SANDBOX_SK = "sk_test_19g744zrbw5buqxqpxp5w4gj"  # shp_mazul_tienda's fixture sandbox key
READY_TIMEOUT = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Running:
    """A payorch process that prints `Listening on URL` when ready; stdout and stderr go to
    files (kept: the secrets test scans them)."""

    def __init__(self, args: list[str], logs: Path, name: str) -> None:
        logs.mkdir(parents=True, exist_ok=True)
        self.stdout = logs / f"{name}.out"
        self.stderr = logs / f"{name}.err"
        self.proc = subprocess.Popen(
            [*PAYORCH, *args],
            stdout=self.stdout.open("w"),
            stderr=self.stderr.open("w"),
            text=True,
        )
        self.url = self._wait_ready()

    def _wait_ready(self) -> str:
        import time

        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            for line in self.stdout.read_text().splitlines():
                if line.startswith("Listening on http://"):
                    return line.split()[-1]
            if self.proc.poll() is not None:
                raise AssertionError(f"exited {self.proc.returncode}: {self.stderr.read_text()}")
            time.sleep(0.05)
        raise AssertionError(f"not ready in {READY_TIMEOUT} s: {self.stderr.read_text()}")

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout=60)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)


def serve(tmp: Path, name: str = "upstream") -> Running:
    return Running(["serve", "--port", "0", "--data-dir", str(tmp / f"{name}-data")], tmp, name)


def start_proxy(upstream: str, out: Path, *extra: str, port: int = 0) -> Running:
    args = ["proxy", "--upstream", upstream, "--port", str(port), "--out", str(out), *extra]
    return Running(args, out.parent, "proxy")


@pytest.fixture
def processes() -> Iterator[list[Running]]:
    """Every process a test starts, killed at its end if still running."""
    started: list[Running] = []
    yield started
    for running in started:
        running.kill()


@pytest.fixture
def upstream(tmp_path: Path, processes: list[Running]) -> Running:
    running = serve(tmp_path)
    processes.append(running)
    return running


@pytest.fixture
def proxied(tmp_path: Path, upstream: Running, processes: list[Running]) -> Callable[..., Running]:
    def start(*extra: str, port: int = 0) -> Running:
        running = start_proxy(upstream.url, tmp_path / "rec", *extra, port=port)
        processes.append(running)
        return running

    return start


def call(
    base: str,
    method: str,
    path: str,
    body: Any = None,
    key: str | None = SANDBOX_SK,
    headers: dict[str, str] | None = None,
    raw: bytes | None = None,
) -> tuple[int, dict[str, str], bytes]:
    """One HTTP request: status, headers (lower-case names) and the body's bytes."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    sent = {"Content-Type": "application/json", **(headers or {})}
    if key is not None:
        sent.setdefault("Authorization", f"Bearer {key}")
    request = urllib.request.Request(base + path, data=data, method=method, headers=sent)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            got = {k.lower(): v for k, v in response.headers.items()}
            return response.status, got, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read()


def call_json(base: str, method: str, path: str, body: Any = None, **kw: Any) -> Any:
    status, _, data = call(base, method, path, body, **kw)
    assert status < 300, (status, data[:500])
    return json.loads(data)


def records(out: Path) -> list[dict[str, Any]]:
    lines = (out / "exchanges.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


class Receiver:
    """A webhook receiver of the test's own: keeps each delivery's headers and body."""

    def __init__(self, status: int = 200) -> None:
        self.deliveries: list[tuple[dict[str, str], bytes]] = []
        self.status = status
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.deliveries.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(receiver.status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver()
    yield running
    running.close()
