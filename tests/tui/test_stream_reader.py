"""The TUI's event-stream reader on the stream the server serves since issue 23 item 7 (its
connection closes with the stream, `Connection: close`): http.client then hands the socket to
the response and forgets it, and the reader had kept its 3 s connect timeout on it, so a quiet
stream ended in `TimeoutError` 3 s after opening ("Lost the server" in the TUI, every few
seconds, on an idle server)."""

from __future__ import annotations

import time

import pytest

from payorch_cli.scenario.fixture import Payorch
from payorch_cli.tui import stream
from payorch_cli.tui.stream import Envelope, EventStreamReader, Opened
from tests.conftest import KEYS


def test_an_open_stream_outlives_the_connect_timeout(
    payorch: Payorch, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A connect timeout the stream then waits longer than: what reads the stream must not be
    # bound by it. (1 ms, tried first, is also shorter than a loaded machine's connect and first
    # answer, so the test failed for the wrong reason.)
    monkeypatch.setattr(stream, "CONNECT_TIMEOUT", 0.3)
    reader = EventStreamReader(payorch.base_url, KEYS.sandbox_sk)
    frames = reader.frames()
    try:
        assert isinstance(next(frames), Opened)
        time.sleep(0.6)  # the open stream idles past the connect timeout before its event
        tx = payorch.client.post("/payments", {"amount": 50, "paymentMethodId": "1001"})
        payorch.client.post(f"/payments/{tx['transactionId']}/simulate", {"action": "paid"})
        frame = next(frames)
        assert isinstance(frame, Envelope) and frame.event["type"] == "payment.completed"
    finally:
        reader.close()
        frames.close()


def test_the_reconnect_waits_grow_until_a_stream_stays_open() -> None:
    now = [100.0]
    backoff = stream.ReconnectBackoff(monotonic=lambda: now[0])
    waits = []
    for _ in range(5):  # opened, then ended at once: no working connection
        backoff.opened()
        waits.append(backoff.next_wait())
    assert waits == [0.25, 0.5, 1.0, 2.0, 2.0]
    assert backoff.next_wait() == 2.0  # could not even open
    backoff.opened()
    now[0] += stream.STABLE_STREAM_SECONDS  # a stream that worked
    assert [backoff.next_wait(), backoff.next_wait()] == [0.25, 0.5]
