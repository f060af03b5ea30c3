"""`payorch listen` for scripts: the same signing secret on every run for a target,
`--print-secret`, and `--json` (one delivery per line on stdout). Real server, real processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from payorch.webhooks import verify
from payorch_cli.client import ApiError, Client
from tests.cli.test_listen import Lines, exit_code, pay_and_settle, start_listen
from tests.cli.test_serve import PAYORCH, Server


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    running = Server(tmp_path / "data")
    yield running
    running.stop()


@pytest.fixture(autouse=True)
def listen_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "payorch" / "listen.json"


def print_secret(server: Server, *args: str) -> str:
    result = subprocess.run(
        [*PAYORCH, "listen", "--print-secret", "--base-url", server.url, *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def run_once(server: Server, *args: str) -> tuple[list[str], Lines]:
    """Start listen, wait until it is ready, Ctrl-C it; its header lines and output."""
    proc, lines = start_listen(server, *args)
    try:
        lines.until("Ready.")
    finally:
        proc.send_signal(signal.SIGINT)
    assert exit_code(proc, lines) == 0
    return lines.seen + lines.rest(), lines


def secret_of(header: list[str]) -> str:
    line = next(line for line in header if line.startswith("Signing secret: "))
    return line.split()[2]


def test_the_secret_is_the_same_on_every_run_and_print_secret_gives_it(
    server: Server, listen_state: Path
) -> None:
    client = Client(server.url)
    first, _ = run_once(server)
    secret = secret_of(first)
    assert "(new; kept for the next runs)" in "\n".join(first)
    assert secret.startswith("whsec_")
    assert json.loads(listen_state.read_text())  # kept in the user's data dir...
    assert oct(listen_state.stat().st_mode & 0o777) == "0o600"  # ...readable by its owner only
    second, _ = run_once(server, "--events", "payment.completed")
    assert secret_of(second) == secret and "(the same as the last run)" in "\n".join(second)
    assert second[0].split()[1] == first[0].split()[1]  # the same subscription, resumed
    assert print_secret(server) == secret + "\n"
    subs = client.list_webhooks()["data"]
    assert len(subs) == 1 and subs[0]["events"] == ["payment.completed"]

    # After a reset the server has no such subscription: listen makes it anew and gives it the
    # same secret (POST /_sim/webhooks/{id}/secret), so a receiver set up with it still works.
    client.post("/_sim/reset")
    third, _ = run_once(server)
    assert secret_of(third) == secret and "(the same as the last run)" in "\n".join(third)
    assert third[0].split()[1] != first[0].split()[1]  # another subscription


class _Endpoint(BaseHTTPRequestHandler):
    """An app that verifies deliveries with the secret it was configured with."""

    secret: ClassVar[str] = ""
    verdicts: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        try:
            verify(body, self.headers["X-Service-Signature"], type(self).secret)
            type(self).verdicts.append("ok")
            self.send_response(200)
        except ValueError as exc:
            type(self).verdicts.append(str(exc))
            self.send_response(400)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def test_print_secret_first_then_forward_to_an_app_configured_with_it(server: Server) -> None:
    endpoint = ThreadingHTTPServer(("127.0.0.1", 0), _Endpoint)
    threading.Thread(target=endpoint.serve_forever, args=(0.05,), daemon=True).start()
    url = f"http://localhost:{endpoint.server_address[1]}/hooks"
    client = Client(server.url)
    try:
        # The script's order: the secret into the app's configuration, then listen.
        printed = json.loads(print_secret(server, "--forward-to", url, "--json"))
        _Endpoint.secret = printed["secret"]
        assert [sub["active"] for sub in client.list_webhooks()["data"]] == [False]
        pay_and_settle(client)  # while nobody listens: not delivered later either
        proc, lines = start_listen(server, "--forward-to", url, "--events", "payment.completed")
        try:
            lines.until("Ready.")
            assert secret_of(lines.seen) == printed["secret"]
            assert printed["webhookId"] in lines.seen[0]
            pay_and_settle(client)
            assert " 200 " in lines.until("payment.completed")
        finally:
            proc.send_signal(signal.SIGTERM)
        assert exit_code(proc, lines) == 0
    finally:
        endpoint.shutdown()
    assert _Endpoint.verdicts == ["ok"]


def test_json_prints_one_delivery_per_line_and_nothing_else_on_stdout(server: Server) -> None:
    client = Client(server.url)
    proc, lines = start_listen(server, "--json", "--events", "payment.completed,payment.failed")
    try:
        deadline = time.monotonic() + 15
        while not any(line.startswith("Ready.") for line in lines.errors):
            assert proc.poll() is None and time.monotonic() < deadline, lines.errors
            time.sleep(0.02)
        paid = pay_and_settle(client)
        failed = pay_and_settle(client, "failed")
        first = json.loads(lines.until("payment.completed"))
        second = json.loads(lines.until("payment.failed"))
    finally:
        proc.send_signal(signal.SIGINT)
    assert exit_code(proc, lines) == 0
    lines.until_closed()
    assert lines.seen == [json.dumps(first), json.dumps(second)] and lines.rest() == []
    assert paid in json.dumps(first["event"]["data"])
    assert failed in json.dumps(second["event"]["data"])
    assert first["signature"] == "ok" and first["attempt"]["httpStatus"] == 200
    assert first["deliveryId"].startswith("dlv_") and first["eventType"] == "payment.completed"
    assert any(line.startswith("Signing secret: whsec_") for line in lines.errors)
    assert not os.environ.get("PAYORCH_API_KEY")  # the fixture key, as a user's first run


def test_a_reset_under_a_running_listen_keeps_its_secret(server: Server) -> None:
    """`payorch reset` gave listen's subscription a new secret, so a receiver started with
    `--print-secret` answered 400 to every delivery; now the new subscription has the old one."""
    client = Client(server.url)
    proc, lines = start_listen(server, "--events", "payment.completed")
    try:
        lines.until("Ready.")
        old = secret_of(lines.seen)
        client.post("/_sim/reset")
        lines.until("The server no longer has the subscription (reset?)")
        lines.until("Signing secret: unchanged")
        pay_and_settle(client)
        line = lines.until("payment.completed", "dlv_")
    finally:
        proc.send_signal(signal.SIGINT)
    assert exit_code(proc, lines) == 0
    assert " 200 " in line and "bad signature" not in line
    assert print_secret(server) == old + "\n"


def test_the_control_plane_sets_a_secret_only_in_its_shape_and_for_its_owner(
    server: Server,
) -> None:
    client = Client(server.url)
    sub = client.create_webhook("http://127.0.0.1:9/hooks", "*", "mine")
    kept = "whsec_" + "k" * 43
    answer = client.post(f"/_sim/webhooks/{sub['id']}/secret", {"secret": kept})
    assert answer["id"] == sub["id"] and "secret" not in answer
    for bad in ("plain", "whsec_short", 42):
        status, body = server.call("POST", f"/_sim/webhooks/{sub['id']}/secret", {"secret": bad})
        assert status == 400 and body["error"]["code"] == "invalid_request", body
    status, body = server.call("POST", "/_sim/webhooks/wh_nope/secret", {"secret": kept})
    assert status == 404 and body["error"]["code"] == "webhook_not_found"
    # Another merchant's sandbox key cannot set it: the same 404 as an unknown id.
    other = Client(server.url, "sk_test_r0jan3b87h6d0oxxygpwsqoi")  # mer_fiestaboletos
    with pytest.raises(ApiError) as refused:
        other.post(f"/_sim/webhooks/{sub['id']}/secret", {"secret": "whsec_" + "x" * 43})
    assert (refused.value.status, refused.value.code) == (404, "webhook_not_found")
    other.close()
