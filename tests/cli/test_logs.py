"""`payorch logs tail` as a user runs it: a real server, a real tail process, Ctrl-C at the end."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import pytest

from payorch_cli.client import ApiError, Client
from tests.cli.test_listen import Lines, _ignore_sigint, exit_code
from tests.cli.test_serve import PAYORCH, Server


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    running = Server(tmp_path / "data")
    yield running
    running.stop()


class Served(Protocol):
    """What `logs tail` needs of a server: its URL (one process here, a cluster elsewhere)."""

    url: str


def start_tail(
    server: Served, *args: str, sigint_ignored: bool = False, columns: int = 200
) -> tuple[subprocess.Popen[str], Lines]:
    proc = subprocess.Popen(
        [*PAYORCH, "logs", "tail", "--base-url", server.url, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": str(columns)},
        preexec_fn=_ignore_sigint if sigint_ignored else None,
    )
    return proc, Lines(proc)


def wait_until_tailing(proc: subprocess.Popen[str], lines: Lines, timeout: float = 15.0) -> None:
    """The tail announces on stderr that its stream is open."""
    deadline = time.monotonic() + timeout
    while not any("Tailing the request log" in line for line in lines.errors):
        assert proc.poll() is None, lines.errors
        assert time.monotonic() < deadline, lines.errors
        time.sleep(0.02)


def test_tail_prints_each_request_and_ctrl_c_exits_0(server: Server) -> None:
    client = Client(server.url, tool=None)  # the user's own calls: untagged
    proc, lines = start_tail(server)
    try:
        wait_until_tailing(proc, lines)
        tx = client.post("/payments", {"amount": 10, "paymentMethodId": "1001"})
        line = lines.until("POST", "/payments")
        assert " 200 " in line and "mer_mercadoazul/sandbox" in line and "ms " in line
        assert " sim " in line and "req_" in line
        with pytest.raises(ApiError) as caught:
            client.get("/payments/TXN-missing")
        line = lines.until("404 transaction_not_found")
        assert caught.value.request_id in line
        client.post("/_sim/clock/advance", {"seconds": 60})
        lines.until("/_sim/clock/advance", " 200 ")
        client.get(f"/payments/{tx['transactionId']}")
        lines.until("GET", tx["transactionId"])
        client.get("/_sim/requests")  # reads of the log are not logged
        client.get("/ping")
        lines.until("/ping")
        assert not any("/_sim/requests" in seen for seen in lines.seen)
    finally:
        proc.send_signal(signal.SIGINT)
    assert exit_code(proc, lines) == 0


def test_json_lines_and_filters(server: Server) -> None:
    client = Client(server.url)  # tags its reads `cli`: shown with --include-tools only
    proc, lines = start_tail(
        server, "--json", "--status", "4xx", "--method", "get", "--include-tools"
    )
    try:
        wait_until_tailing(proc, lines)
        client.post("/payments", {"amount": 10, "paymentMethodId": "1001"})
        for path in ("/payments/TXN-1", "/webhooks/wh_nope"):
            with pytest.raises(ApiError):
                client.get(path)
        first = json.loads(lines.until("TXN-1"))
        assert (first["status"], first["errorCode"]) == (404, "transaction_not_found")
        assert set(first) >= {"at", "simulatedAt", "durationMs", "idempotentReplayed"}
        second = json.loads(lines.until("wh_nope"))
        assert second["errorCode"] == "webhook_not_found"
        assert len(lines.seen) == 2  # the POST was no 4xx
    finally:
        proc.send_signal(signal.SIGTERM)
    assert exit_code(proc, lines) == 0


def test_ctrl_c_stops_a_tail_started_with_sigint_ignored(server: Server) -> None:
    proc, lines = start_tail(server, sigint_ignored=True)
    try:
        wait_until_tailing(proc, lines)
    finally:
        proc.send_signal(signal.SIGINT)
    assert exit_code(proc, lines) == 0


def test_a_filter_the_server_refuses_exits_1_naming_it(server: Server) -> None:
    proc, lines = start_tail(server, "--path", "payments")
    assert exit_code(proc, lines) == 1
    lines.until_closed()
    errors = "".join(lines.errors)
    assert "invalid_request: path: a path starting with /" in errors, errors


def test_a_bad_status_filter_is_a_usage_error_before_any_request(server: Server) -> None:
    proc, lines = start_tail(server, "--status", "4yy")
    assert exit_code(proc, lines) == 2
    lines.until_closed()
    errors = "".join(lines.errors)
    assert "'4yy' is not a status: write a class (2xx, 4xx, 5xx) or one status (404)" in errors


def _traffic(client: Client) -> dict[str, str]:
    """A payment, a read of it, a refused request and a long query; the request id of each."""
    tx = client.post("/payments", {"amount": 10, "paymentMethodId": "1001"})
    client.get(f"/payments/{tx['transactionId']}")
    with pytest.raises(ApiError) as refused:
        client.post("/payments", {"amount": 0, "paymentMethodId": "1001"})
    client.get("/payments", limit=5, merchantOrderId="order-" + "x" * 60)
    rows = client.get("/_sim/requests", limit=4)["data"]
    assert refused.value.request_id == rows[1]["id"]
    return {"tx": tx["transactionId"], "refused": rows[1]["id"], "ids": [r["id"] for r in rows]}


@pytest.mark.parametrize("columns", [80, 120])
def test_one_line_per_request_with_the_whole_id_at_the_terminal_width(
    server: Server, columns: int
) -> None:
    client = Client(server.url, tool=None)
    proc, lines = start_tail(server, columns=columns)
    try:
        wait_until_tailing(proc, lines)
        seen = _traffic(client)
        for _ in range(4):
            lines.until("req_")
    finally:
        proc.send_signal(signal.SIGINT)
    assert exit_code(proc, lines) == 0
    assert len(lines.seen) == 4
    for line, request_id in zip(lines.seen, reversed(seen["ids"]), strict=True):
        assert len(line) < columns, line
        assert f" {request_id}" in line  # whole, never cut
    create, read, refused, listed = lines.seen
    assert create.split()[1:4] == ["POST", "/payments", "200"]
    assert f"/payments/{seen['tx']}" in read  # the API prefix is left out; the id fits whole
    assert " 400 " in refused and "…" in listed  # cut in the middle
    assert listed.split()[2].startswith("/payments")
    assert listed.split()[2].endswith("x" * 10)
    if columns == 80:
        assert "amount_invalid" not in refused and "ms " not in refused  # they gave way
    else:
        assert "400 amount_invalid" in refused and "ms req_" in refused
        assert "mer_mercadoazul" not in refused  # from about 160 columns


def test_logs_show_prints_one_request_with_its_bodies(server: Server) -> None:
    client = Client(server.url, tool=None)
    seen = _traffic(client)
    env = {**os.environ, "COLUMNS": "80"}
    shown = subprocess.run(
        [*PAYORCH, "logs", "show", seen["refused"], "--base-url", server.url],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert out.startswith("POST /api/v1/payments\n")
    assert f"Request id:  {seen['refused']}" in out and "Status:      400 amount_invalid" in out
    assert "Request body (40 bytes):" in out and '"amount": 0' in out
    assert '"code": "amount_invalid"' in out

    as_json = subprocess.run(
        [*PAYORCH, "logs", "show", seen["refused"], "--json", "--base-url", server.url],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
        check=False,
    )
    detail = json.loads(as_json.stdout)
    assert detail["id"] == seen["refused"] and detail["request"]["body"]["body"]["amount"] == 0
    assert detail["response"]["body"]["body"]["error"]["code"] == "amount_invalid"


def test_logs_show_of_an_unknown_request_exits_1_with_the_reason(server: Server) -> None:
    shown = subprocess.run(
        [*PAYORCH, "logs", "show", "req_nope", "--base-url", server.url],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert shown.returncode == 1 and shown.stdout == ""
    assert shown.stderr.startswith("payorch logs show: request_not_found: "), shown.stderr


def test_with_include_tools_a_tools_request_is_marked_in_tail_and_show(server: Server) -> None:
    """--include-tools mixes payorch's own requests with the user's (item 9): each says which
    tool made it, in the tail's wide layout (and a pipe's) and in `logs show`; the user's
    requests carry no mark, and at 80 columns the whole request id still comes first."""
    user, tui = Client(server.url, tool=None), Client(server.url, tool="tui")
    proc, lines = start_tail(server, "--include-tools", columns=200)
    try:
        wait_until_tailing(proc, lines)
        user.get("/me")
        tui.get("/me/balance")
        mine, polled = lines.until("req_"), lines.until("req_")
    finally:
        proc.send_signal(signal.SIGINT)
    assert exit_code(proc, lines) == 0
    assert "/me " in mine and "tool:" not in mine
    assert "/me/balance" in polled and polled.endswith("tool:tui"), polled
    request_id = next(word for word in polled.split() if word.startswith("req_"))
    shown = subprocess.run(
        [*PAYORCH, "logs", "show", request_id, "--base-url", server.url],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    assert "Made by:     payorch's tui (X-Payorch-Tool), not your code" in shown.stdout
