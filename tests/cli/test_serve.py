"""`payorch serve` and `payorch keys` as a user runs them: real processes, real signals."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from payorch_cli.main import app

PAYORCH = [sys.executable, "-m", "payorch_cli.main"]
SANDBOX_SK = "sk_test_19g744zrbw5buqxqpxp5w4gj"


class Server:
    def __init__(self, data_dir: Path) -> None:
        self.proc = subprocess.Popen(
            [*PAYORCH, "serve", "--port", "0", "--data-dir", str(data_dir)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.startswith("Listening on http://127.0.0.1:"), (
            line + self.proc.stderr.read() if self.proc.stderr else line
        )
        self.url = line.split()[-1]

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.url + path,
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {SANDBOX_SK}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    def stop(self, sig: int = signal.SIGTERM) -> int:
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=15)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def server(data_dir: Path) -> Iterator[Server]:
    running = Server(data_dir)
    yield running
    if running.proc.poll() is None:
        running.stop(signal.SIGKILL)


def test_serve_prints_listening_line_and_answers(server: Server) -> None:
    status, body = server.call("GET", "/api/v1/ping")
    assert status == 200 and body["ok"] is True


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signals_exit_zero_and_data_survives_restart(data_dir: Path, sig: int) -> None:
    first = Server(data_dir)
    status, tx = first.call("POST", "/api/v1/payments", {"amount": 12, "paymentMethodId": "1001"})
    assert status == 200
    assert first.stop(sig) == 0
    second = Server(data_dir)
    try:
        status, again = second.call("GET", f"/api/v1/payments/{tx['transactionId']}")
        assert status == 200 and again["amount"] == 12
    finally:
        second.stop()


def test_second_server_on_same_data_dir_is_refused(server: Server, data_dir: Path) -> None:
    result = subprocess.run(
        [*PAYORCH, "serve", "--port", "0", "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert result.returncode == 1
    assert "in use by another payorch server" in result.stderr


def test_a_taken_port_suggests_port_0(data_dir: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [*PAYORCH, "serve", "--port", str(port), "--data-dir", str(data_dir)],
            capture_output=True,
            text=True,
            timeout=20,
        )
    assert result.returncode == 1
    [line] = result.stderr.splitlines()
    assert line.startswith(f"payorch serve: cannot listen on 127.0.0.1:{port}: the port is taken")
    assert "--port 0 for any free port" in line


def test_a_worker_socket_from_elsewhere_is_refused_not_served(data_dir: Path) -> None:
    """PAYORCH_WORKER_SOCKET is how `serve --workers` hands a worker its listening socket: set
    by anything else (not a number, no such descriptor, a socket that is not listening), serve
    refuses it in one line and never listens."""
    with socket.socket() as bound:  # bound, inherited, but not listening
        bound.bind(("127.0.0.1", 0))
        for value, fds in (("abc", ()), ("987", ()), (str(bound.fileno()), (bound.fileno(),))):
            result = subprocess.run(
                [*PAYORCH, "serve", "--port", "0", "--data-dir", str(data_dir)],
                capture_output=True,
                text=True,
                timeout=20,
                env={**os.environ, "PAYORCH_WORKER_SOCKET": value},
                pass_fds=fds,
            )
            assert result.returncode == 2 and "Listening" not in result.stdout, value
            [line] = result.stderr.splitlines()
            assert line == (
                f"payorch serve: PAYORCH_WORKER_SOCKET={value!r} is not a listening socket of "
                "this process (serve --workers sets it for its workers): unset it"
            )


@pytest.mark.long(9)
def test_kill_9_loses_no_acknowledged_payment(data_dir: Path) -> None:
    """SIGKILL at arbitrary moments: every payment answered 200 is there after a restart."""
    acknowledged: list[str] = []
    for round_number in range(3):
        server = Server(data_dir)
        deadline = time.monotonic() + 0.3 + round_number * 0.2
        while time.monotonic() < deadline:
            status, tx = server.call(
                "POST",
                "/api/v1/payments",
                {"amount": 5, "paymentMethodId": "1006", "documentId": "52998224725"},
            )
            assert status == 200, tx
            acknowledged.append(tx["transactionId"])
        os.kill(server.proc.pid, signal.SIGKILL)
        server.proc.wait(timeout=10)
    final = Server(data_dir)
    try:
        for tx_id in acknowledged:
            status, _ = final.call("GET", f"/api/v1/payments/{tx_id}")
            assert status == 200, tx_id
        status, page = final.call("GET", "/api/v1/payments?limit=1")
        assert page["pagination"]["total"] == len(acknowledged)
    finally:
        final.stop()


def test_keys_json_lists_every_credential() -> None:
    result = subprocess.run(
        [*PAYORCH, "keys", "--json"], capture_output=True, text=True, timeout=20
    )
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert {tuple(sorted(r)) for r in rows} == {
        ("environment", "merchantId", "merchantName", "publishableKey", "secretKey", "shopId")
    }
    assert any(r["shopId"] is None and r["publishableKey"] is None for r in rows)
    assert {r["environment"] for r in rows} == {"sandbox", "production"}
    for row in rows:
        prefix = "test" if row["environment"] == "sandbox" else "live"
        assert row["secretKey"].startswith(f"sk_{prefix}_")


# In-process: `payorch keys --json` above is the real process; these two only read its output.
def test_keys_table() -> None:
    result = CliRunner().invoke(app, ["keys"])
    assert result.exit_code == 0 and "sk_test_" in result.stdout


def test_keys_honours_the_global_json_flag() -> None:
    result = CliRunner().invoke(app, ["--json", "keys"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)[0]["secretKey"].startswith("sk_")


def test_event_payloads_link_to_the_port_the_server_took(server: Server) -> None:
    """With --port 0 the port is known only once bound; the links inside pay-in events
    (paymentFormUrl, checkoutUrl) must use it, as the API's answers do."""
    status, hook = server.call("POST", "/api/v1/webhooks", {"events": ["payment.completed"]})
    assert status == 201, hook
    hosted = {"amount": 50, "paymentMethodId": "1025"}  # a card form: flow hosted
    status, tx = server.call("POST", "/api/v1/payments", hosted)
    assert status == 200 and tx["paymentFormUrl"].startswith(server.url + "/"), tx
    tx_id = tx["transactionId"]
    status, _ = server.call("POST", f"/api/v1/payments/{tx_id}/simulate", {"action": "paid"})
    assert status == 200
    status, page = server.call("GET", f"/api/v1/webhooks/{hook['id']}/deliveries")
    assert status == 200, page
    [delivery] = page["data"]
    assert delivery["event"]["data"]["paymentFormUrl"] == tx["paymentFormUrl"]
