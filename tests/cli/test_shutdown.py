"""Graceful shutdown of `payorch serve`: SIGTERM while requests are in flight.

Each request in flight either finishes (and is answered) or is cleanly refused (a 503 in the
envelope, or a connection the server never read); the process exits 0 within 10 s; and every
acknowledged write is there after a restart, with nothing unacknowledged half-applied.
"""

from __future__ import annotations

import http.client
import json
import signal
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import tests.cli.test_serve as serve_tests  # the Server helper (a module import: no test reuse)

SANDBOX_SK = serve_tests.SANDBOX_SK
EXIT_BUDGET_SECONDS = 10.0


class SlowReceiver:
    """A webhook endpoint on loopback that answers 200 after `delay` seconds."""

    def __init__(self) -> None:
        self.delay = 0.0
        self.arrivals = 0  # deliveries received so far (counted before the delay)
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.arrivals += 1
                time.sleep(receiver.delay)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hook"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def receiver() -> Iterator[SlowReceiver]:
    running = SlowReceiver()
    yield running
    running.close()


def request(url: str, method: str, body: Any = None, timeout: float = 20) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Authorization": f"Bearer {SANDBOX_SK}", "Content-Type": "application/json"}
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def delivery_ready(server: serve_tests.Server, receiver: SlowReceiver) -> tuple[str, str]:
    """A webhook to `receiver` and one delivery with its first attempt recorded."""
    status, hook = server.call(
        "POST", "/api/v1/webhooks", {"url": receiver.url, "events": ["payment.completed"]}
    )
    assert status == 201, hook
    status, tx = server.call("POST", "/api/v1/payments", {"amount": 10, "paymentMethodId": "1001"})
    assert status == 200, tx
    status, _ = server.call(
        "POST", f"/api/v1/payments/{tx['transactionId']}/simulate", {"action": "paid"}
    )
    assert status == 200
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        _, page = server.call("GET", f"/api/v1/webhooks/{hook['id']}/deliveries")
        if page["data"] and page["data"][0]["attemptCount"] >= 1:
            return hook["id"], page["data"][0]["id"]
        time.sleep(0.05)
    raise AssertionError("the first delivery attempt was never recorded")


def until(condition: Callable[[], bool], what: str, timeout: float = 10) -> None:
    """Wait for `condition` (a request in flight, an answer given), not for a guessed time: on
    a loaded machine half a second is not always enough for a request to arrive."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.02)


def stop_and_time(server: serve_tests.Server) -> tuple[int, float]:
    started = time.monotonic()
    server.proc.send_signal(signal.SIGTERM)
    code = server.proc.wait(timeout=EXIT_BUDGET_SECONDS + 5)
    return code, time.monotonic() - started


def test_sigterm_finishes_requests_in_flight_and_loses_nothing(
    tmp_path: Path, receiver: SlowReceiver
) -> None:
    data_dir = tmp_path / "data"
    server = serve_tests.Server(data_dir)
    try:
        hook_id, delivery_id = delivery_ready(server, receiver)
        receiver.delay = 1.5  # the replay below is in flight for 1.5 s
        replay: dict[str, Any] = {}
        replay_url = f"{server.url}/api/v1/webhooks/{hook_id}/deliveries/{delivery_id}/replay"
        replay_thread = threading.Thread(
            target=lambda: replay.update(result=request(replay_url, "POST"))
        )
        # And a stream of new payments from four clients, straddling the signal.
        outcomes: list[tuple[str, Any]] = []
        stop = threading.Event()

        def pay() -> None:
            while not stop.is_set():
                try:
                    status, body = request(
                        f"{server.url}/api/v1/payments",
                        "POST",
                        {"amount": 5, "paymentMethodId": "1001"},
                        timeout=10,
                    )
                except (urllib.error.URLError, ConnectionError, http.client.HTTPException) as exc:
                    outcomes.append(("refused", type(exc).__name__))
                    return  # the server is gone: every later attempt is refused the same way
                outcomes.append((str(status), body))

        payers = [threading.Thread(target=pay) for _ in range(4)]
        replay_thread.start()
        for thread in payers:
            thread.start()
        until(lambda: receiver.arrivals == 2, "the replay reached the receiver")
        until(lambda: any(kind == "200" for kind, _ in list(outcomes)), "a payment answered")
        code, elapsed = stop_and_time(server)
        stop.set()
        replay_thread.join(timeout=15)
        for thread in payers:
            thread.join(timeout=15)
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
    assert code == 0 and elapsed < EXIT_BUDGET_SECONDS, (code, elapsed)
    # The replay finished inside the grace period: answered, with its attempt.
    status, delivery = replay["result"]
    assert status == 200, delivery
    assert [a["trigger"] for a in delivery["attempts"]] == ["initial", "replay"]
    # Each payment was answered 200 or cleanly refused; nothing hung, nothing half-answered.
    kinds = {kind for kind, _ in outcomes}
    assert kinds <= {"200", "503", "refused"}, outcomes
    acknowledged = [body["transactionId"] for kind, body in outcomes if kind == "200"]
    assert acknowledged, "no payment got through before the signal"

    again = serve_tests.Server(data_dir)
    try:
        for tx_id in acknowledged:
            status, _ = again.call("GET", f"/api/v1/payments/{tx_id}")
            assert status == 200, tx_id
        _, page = again.call("GET", "/api/v1/payments?limit=1")
        # Exactly the acknowledged ones (plus the one paid at the start): none was applied
        # without its answer.
        assert page["pagination"]["total"] == len(acknowledged) + 1
        _, deliveries = again.call("GET", f"/api/v1/webhooks/{hook_id}/deliveries")
        kept = next(d for d in deliveries["data"] if d["id"] == delivery_id)
        assert [a["trigger"] for a in kept["attempts"]] == ["initial", "replay"]
    finally:
        again.stop()


@pytest.mark.long(8)
def test_a_request_outliving_the_grace_is_answered_503(
    tmp_path: Path, receiver: SlowReceiver
) -> None:
    data_dir = tmp_path / "data"
    server = serve_tests.Server(data_dir)
    try:
        hook_id, delivery_id = delivery_ready(server, receiver)
        receiver.delay = 8.0  # longer than the shutdown grace, shorter than the 10 s timeout
        replay: dict[str, Any] = {}
        url = f"{server.url}/api/v1/webhooks/{hook_id}/deliveries/{delivery_id}/replay"
        thread = threading.Thread(target=lambda: replay.update(result=request(url, "POST")))
        thread.start()
        until(lambda: receiver.arrivals == 2, "the replay reached the receiver")
        code, elapsed = stop_and_time(server)
        thread.join(timeout=15)
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
    assert code == 0 and elapsed < EXIT_BUDGET_SECONDS, (code, elapsed)
    status, body = replay["result"]
    assert status == 503, json.dumps(body)[:3000]
    assert body["error"]["code"] == "service_unavailable"
    again = serve_tests.Server(data_dir)
    try:
        # Refused, so not recorded: the delivery still has its one automatic attempt.
        _, deliveries = again.call("GET", f"/api/v1/webhooks/{hook_id}/deliveries")
        kept = next(d for d in deliveries["data"] if d["id"] == delivery_id)
        assert [a["trigger"] for a in kept["attempts"]] == ["initial"]
    finally:
        again.stop()
