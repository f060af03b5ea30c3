"""`payorch serve --egress-allow/--egress-deny`: a rule that does not parse is one line and exit
2 before anything is served or written; given rules turn the egress policy on (real process,
a listener counting connections)."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from tests.cli.test_serve import PAYORCH, Server


def test_a_rule_that_does_not_parse_is_one_line_and_exit_2(tmp_path: Path) -> None:
    data = tmp_path / "d"
    result = subprocess.run(
        [
            *PAYORCH,
            "serve",
            "--port",
            "0",
            "--data-dir",
            str(data),
            "--egress-allow",
            "10.0.0.0/8",
            "--egress-deny",
            "10.0.0.0/33",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert lines == [
        "payorch serve: --egress-deny 10.0.0.0/33: not a CIDR or an address "
        "('10.0.0.0/33' does not appear to be an IPv4 or IPv6 network)"
    ]
    assert not data.exists()


class RuledServer(Server):
    def __init__(self, data_dir: Path, *args: str) -> None:
        self.proc = subprocess.Popen(
            [*PAYORCH, "serve", "--port", "0", "--data-dir", str(data_dir), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.startswith("Listening on http://127.0.0.1:"), line
        self.url = line.split()[-1]


def counting_listener() -> tuple[socket.socket, list[int]]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    count = [0]

    def accept() -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            count[0] += 1
            conn.close()

    threading.Thread(target=accept, daemon=True).start()
    return sock, count


def test_rules_turn_the_policy_on_without_team_mode(tmp_path: Path) -> None:
    listener, connections = counting_listener()
    port = listener.getsockname()[1]
    server = RuledServer(tmp_path / "d", "--egress-deny", "metadata.example")
    try:
        status, sub = server.call(
            "POST", "/api/v1/webhooks", {"url": f"http://127.0.0.1:{port}/h", "events": "*"}
        )
        assert status == 201, sub
        status, tx = server.call(
            "POST", "/api/v1/payments", {"amount": 50, "paymentMethodId": "1001"}
        )
        assert status == 200, tx
        server.call("POST", f"/api/v1/payments/{tx['transactionId']}/simulate", {"action": "paid"})
        rows: list[Any] = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            _, page = server.call("GET", f"/api/v1/webhooks/{sub['id']}/deliveries")
            rows = page["data"]
            if rows and all(row["status"] != "pending" for row in rows):
                break
            time.sleep(0.05)
        assert rows and {row["status"] for row in rows} == {"failed"}, rows
        for row in rows:
            error = row["attempts"][0]["error"]
            assert error == "refused by the egress policy: 127.0.0.1 (loopback)", error
        assert connections[0] == 0
    finally:
        assert server.stop() == 0
        listener.close()
