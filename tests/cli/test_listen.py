"""`payorch listen` as a user runs it: a real server, a real listen process, Ctrl-C at the end."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from payorch_cli.client import Client
from tests.cli.test_serve import PAYORCH, Server


class Lines:
    """A process's stdout, line by line, with a deadline."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.seen: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self.errors: list[str] = []
        self._errors_done = threading.Event()
        threading.Thread(target=self._pump, daemon=True).start()
        # Drained too: a child blocked on a full stderr pipe would never exit.
        threading.Thread(target=self._pump_errors, daemon=True).start()

    def _pump_errors(self) -> None:
        assert self.proc.stderr is not None
        self.errors.extend(self.proc.stderr)
        self._errors_done.set()

    def until_closed(self, timeout: float = 10.0) -> None:
        """Wait until the process has closed its stderr (all of it is in `errors`)."""
        assert self._errors_done.wait(timeout), "stderr still open"

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def rest(self) -> list[str]:
        """The lines not read yet (all of them, once the process has ended)."""
        rest: list[str] = []
        while not self._queue.empty():
            line = self._queue.get_nowait()
            if line is not None:
                rest.append(line)
        return rest

    def until(self, *needles: str, timeout: float = 10.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no line with {needles}; got {self.seen}") from None
            if line is None:
                raise AssertionError(f"output ended without {needles}; got {self.seen}")
            self.seen.append(line)
            if all(n in line for n in needles):
                return line


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    running = Server(tmp_path / "data")
    yield running
    running.stop()


@pytest.fixture(autouse=True)
def listen_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where listen keeps its subscriptions' secrets (the user's data dir): one per test."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "payorch" / "listen.json"


def paused(client: Client) -> list[str]:
    """The ids of the subscriptions left paused (listen keeps them for its next run)."""
    subs = client.list_webhooks()["data"]
    assert all(not sub["active"] for sub in subs), subs
    return [sub["id"] for sub in subs]


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def start_listen(
    server: Server, *args: str, sigint_ignored: bool = False
) -> tuple[subprocess.Popen[str], Lines]:
    proc = subprocess.Popen(
        [*PAYORCH, "listen", "--base-url", server.url, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        # As a shell starts a background job (`payorch listen &` in a script, a CI step).
        preexec_fn=_ignore_sigint if sigint_ignored else None,
    )
    return proc, Lines(proc)


def exit_code(proc: subprocess.Popen[str], lines: Lines, timeout: float = 15.0) -> int:
    """The process's exit code; if it does not exit in time, a failure that shows its output."""
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        signals = _signal_masks(proc.pid), _signal_masks("self")
        proc.kill()
        proc.wait()
        lines.until_closed()
        raise AssertionError(
            f"still running {timeout} s after the signal; stdout {lines.seen + lines.rest()}, "
            f"stderr {lines.errors}; signal masks (process, test) {signals}"
        ) from None


def _signal_masks(pid: int | str) -> list[str]:
    status = Path(f"/proc/{pid}/status")
    if not status.exists():
        return []
    return [line for line in status.read_text().splitlines() if line.startswith("Sig")]


def pay_and_settle(client: Client, action: str = "paid") -> str:
    tx = client.post("/payments", {"amount": 10, "paymentMethodId": "1001"})
    client.post(f"/payments/{tx['transactionId']}/simulate", {"action": action})
    return tx["transactionId"]


def test_listen_prints_deliveries_and_cleans_up_on_ctrl_c(server: Server) -> None:
    client = Client(server.url)
    proc, lines = start_listen(server, "--events", "payment.completed,payment.failed")
    try:
        lines.until("Ready.")
        assert any("local receiver, verifying signatures" in line for line in lines.seen)
        assert client.list_webhooks()["pagination"]["total"] == 1
        pay_and_settle(client)
        line = lines.until("payment.completed", "dlv_")
        assert " 200 " in line and " ms" in line  # HTTP status and latency
        pay_and_settle(client, "failed")
        lines.until("payment.failed", " 200 ")
        assert not any("payment.captured" in seen for seen in lines.seen)  # not subscribed
        assert not any("bad signature" in seen for seen in lines.seen)
    finally:
        proc.send_signal(signal.SIGINT)
    assert exit_code(proc, lines) == 0
    lines.until("Paused subscription")
    assert len(paused(client)) == 1


def test_ctrl_c_stops_listen_even_when_started_with_sigint_ignored(server: Server) -> None:
    client = Client(server.url)
    proc, lines = start_listen(server, sigint_ignored=True)
    try:
        lines.until("Ready.")
    finally:
        proc.send_signal(signal.SIGINT)
    assert exit_code(proc, lines) == 0
    lines.until("Paused subscription")
    assert len(paused(client)) == 1


class _Endpoint(BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        type(self).hits.append(self.headers["X-Service-Event"])
        self.send_response(202)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def test_listen_forwards_to_a_url_and_stops_on_sigterm(server: Server) -> None:
    endpoint = ThreadingHTTPServer(("127.0.0.1", 0), _Endpoint)
    threading.Thread(target=endpoint.serve_forever, args=(0.05,), daemon=True).start()
    url = f"http://localhost:{endpoint.server_address[1]}/hooks"
    client = Client(server.url)
    proc, lines = start_listen(server, "--forward-to", url, "--events", "payment.completed")
    try:
        lines.until("Ready.")
        # `(forwarding)` beside the URL, or under it where 80 columns hold only the URL.
        header = "\n".join(lines.seen)
        assert f"-> {url}" in header and "(forwarding)" in header
        pay_and_settle(client)
        assert " 202 " in lines.until("payment.completed")
        assert _Endpoint.hits == ["payment.completed"]
    finally:
        proc.send_signal(signal.SIGTERM)
        endpoint.shutdown()
    assert exit_code(proc, lines) == 0
    assert len(paused(client)) == 1


def test_listen_refuses_a_bad_url(server: Server) -> None:
    proc, lines = start_listen(server, "--forward-to", "http://example.com/hooks")
    assert exit_code(proc, lines, timeout=20) == 1
    lines.until_closed()
    assert "https" in "".join(lines.errors)


def test_a_retry_line_fits_80_columns_with_its_reason_under_it(server: Server) -> None:
    """A failed attempt's reason made the line wrap at 80 columns (issue 36 item 5): it goes
    under the attempt, wrapped at words, when the line would pass the terminal's width."""
    client = Client(server.url)
    dead = "http://127.0.0.1:9/hooks"  # the discard port: the connection is refused
    proc = subprocess.Popen(
        [*PAYORCH, "listen", "--base-url", server.url, "--forward-to", dead],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "80"},
    )
    lines = Lines(proc)
    try:
        lines.until("Ready.")
        pay_and_settle(client)
        first = lines.until("payment.completed", "ERR")
        client.post("/_sim/clock/advance", {"seconds": 61})
        retry = lines.until("payment.completed", "ERR")
        reason = lines.until("retry")
    finally:
        proc.send_signal(signal.SIGTERM)
    assert exit_code(proc, lines) == 0
    printed = lines.seen + lines.rest()
    attempts = printed[printed.index(first) :]
    assert [line for line in attempts if len(line) > 80 or line != line.rstrip()] == []
    assert retry.split()[1:2] == ["payment.completed"] and "ERR" in retry.split()
    assert reason.startswith(" " * 10 + "retry · ")
