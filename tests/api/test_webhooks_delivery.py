"""The delivery engine: signed, asynchronous, retried on the simulated clock, rotated, replayed."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import json
import socket
import threading
import time
from typing import Any

import pytest
import stripe
from aiohttp.test_utils import TestClient, TestServer

import payorch.webhooks
from simulator.app import create_app
from simulator.domain.deliveries import RETRY_DELAYS
from simulator.http.keys import BUS, ENGINE, STORE
from simulator.settings import Settings
from tests.api.webhook_receiver import (
    Receiver,
    deliveries,
    drain,
    paid_payment,
    start_receiver,
    subscribe,
)
from tests.conftest import Api, Keys, assert_error


@pytest.fixture
async def receiver(aiohttp_server: Any) -> Receiver:
    return await start_receiver(aiohttp_server)


def parse_header(header: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in header.split(","))


def hand_hmac(secret: str, t: str, body: bytes) -> str:
    return hmac.new(secret.encode(), t.encode() + b"." + body, hashlib.sha256).hexdigest()


def seconds(iso: str) -> float:
    from simulator.clock import parse_iso

    return parse_iso(iso).timestamp()


async def test_signed_delivery_verifies_three_ways(
    api: Api, keys: Keys, receiver: Receiver
) -> None:
    sub = await subscribe(api, receiver.url)
    tx = await paid_payment(api)
    received = await receiver.wait_for(2)
    assert sorted(r.event_type for r in received) == ["payment.captured", "payment.completed"]
    for item in received:
        header = item.signature
        parts = parse_header(header)
        assert set(parts) == {"t", "v1"}
        assert abs(int(parts["t"]) - time.time()) < 5  # real wall-clock time, not simulated
        stripe.WebhookSignature.verify_header(item.body.decode(), header, sub["secret"], 300)
        assert hmac.compare_digest(parts["v1"], hand_hmac(sub["secret"], parts["t"], item.body))
        event = payorch.webhooks.verify(item.body, header, sub["secret"])
        assert item.delivery_id.startswith("dlv_")
        assert item.headers["Content-Type"] == "application/json"
        assert set(event) == {"id", "type", "apiVersion", "environment", "createdAt", "data"}
        assert event["type"] == item.event_type and event["apiVersion"] == "2026-05-01"
        assert event["environment"] == "sandbox" and event["data"]["id"] == tx["transactionId"]
        assert event["data"]["status"] == "completed"
    await drain(api.client)
    listed = await deliveries(api, sub["id"])
    assert {d["id"] for d in listed} == {r.delivery_id for r in received}
    for delivery in listed:
        assert delivery["status"] == "succeeded" and delivery["attemptCount"] == 1
        attempt = delivery["attempts"][0]
        assert attempt["httpStatus"] == 200 and attempt["error"] is None
        assert attempt["durationMs"] >= 0 and attempt["trigger"] == "initial"
        assert attempt["responseBody"] == "receiver says hi"
        assert (
            delivery["event"]["id"]
            == json.loads(next(r.body for r in received if r.delivery_id == delivery["id"]))["id"]
        )


async def test_the_api_call_does_not_wait_for_the_endpoint(api: Api, receiver: Receiver) -> None:
    receiver.gate = asyncio.Event()  # the endpoint answers nothing until released
    await subscribe(api, receiver.url, ["payment.completed"])
    await asyncio.wait_for(paid_payment(api), 10)  # answered while the endpoint hangs
    await receiver.wait_for(1)
    receiver.gate.set()


async def test_only_subscribed_events_are_sent(api: Api, keys: Keys, receiver: Receiver) -> None:
    await subscribe(api, receiver.url, ["payment.failed"])
    await paid_payment(api)
    tx = await api.pay()
    await api.post(
        f"/payments/{tx['transactionId']}/simulate", keys.sandbox_sk, json={"action": "failed"}
    )
    received = await receiver.wait_for(1)
    await drain(api.client)
    assert [r.event_type for r in receiver.received] == ["payment.failed"]
    assert received[0].json()["data"]["id"] == tx["transactionId"]


async def test_other_merchants_and_environments_get_nothing(
    api: Api, keys: Keys, receiver: Receiver
) -> None:
    await subscribe(api, receiver.url, key=keys.other_sk)
    await paid_payment(api)
    await drain(api.client)
    assert receiver.received == []


async def test_rotation_signs_v0_with_the_old_secret_for_24_hours(
    api: Api, keys: Keys, receiver: Receiver
) -> None:
    sub = await subscribe(api, receiver.url, ["payment.completed"])
    old = sub["secret"]
    _status, rotated, _ = await api.post(f"/webhooks/{sub['id']}/rotate-secret", keys.sandbox_sk)
    new = rotated["secret"]
    await paid_payment(api)
    item = (await receiver.wait_for(1))[0]
    parts = parse_header(item.signature)
    assert set(parts) == {"t", "v1", "v0"}
    assert parts["v1"] == hand_hmac(new, parts["t"], item.body)
    assert parts["v0"] == hand_hmac(old, parts["t"], item.body)
    stripe.WebhookSignature.verify_header(item.body.decode(), item.signature, new, 300)
    with pytest.raises(stripe.SignatureVerificationError):  # stripe reads v1 only
        stripe.WebhookSignature.verify_header(item.body.decode(), item.signature, old, 300)
    payorch.webhooks.verify(item.body, item.signature, old)  # v0: an endpoint mid-switch
    await api.advance(86_400 - 60)
    await paid_payment(api)
    assert "v0" in parse_header((await receiver.wait_for(2))[1].signature)
    await api.advance(61)  # the grace is over: the old secret is gone
    await paid_payment(api)
    item = (await receiver.wait_for(3))[2]
    assert set(parse_header(item.signature)) == {"t", "v1"}
    with pytest.raises(payorch.webhooks.SignatureVerificationError):
        payorch.webhooks.verify(item.body, item.signature, old)
    stored = api.client.server.app[STORE].table("webhooks").get(sub["id"])
    assert stored["previousSecret"] is None


async def test_retries_follow_the_schedule_then_succeed(
    api: Api, keys: Keys, receiver: Receiver
) -> None:
    receiver.policy = lambda item, seen: 500 if seen < 2 else 200
    sub = await subscribe(api, receiver.url, ["payment.completed"])
    await paid_payment(api)
    await receiver.wait_for(1)
    await drain(api.client)
    [delivery] = await deliveries(api, sub["id"])
    assert delivery["status"] == "pending" and delivery["attempts"][0]["httpStatus"] == 500
    first_at = seconds(delivery["attempts"][0]["at"])
    assert delivery["nextAttemptAt"] and seconds(delivery["nextAttemptAt"]) == pytest.approx(
        first_at + 60, abs=0.01
    )
    await api.advance(59)
    await drain(api.client)
    assert len(receiver.received) == 1
    await api.advance(1 + 300)  # both the 1-minute and the 5-minute retries fall due
    await receiver.wait_for(3)
    await drain(api.client)
    [delivery] = await deliveries(api, sub["id"])
    assert delivery["status"] == "succeeded" and delivery["nextAttemptAt"] is None
    assert [a["httpStatus"] for a in delivery["attempts"]] == [500, 500, 200]
    assert [a["trigger"] for a in delivery["attempts"]] == ["initial", "retry", "retry"]
    ats = [seconds(a["at"]) for a in delivery["attempts"]]
    assert ats[1] - ats[0] == pytest.approx(60, abs=0.01)
    assert ats[2] - ats[1] == pytest.approx(300, abs=0.01)
    # Same delivery id and body, freshly signed each time.
    assert len({r.delivery_id for r in receiver.received}) == 1
    assert len({r.body for r in receiver.received}) == 1
    ts = [int(parse_header(r.signature)["t"]) for r in receiver.received]
    assert ts == sorted(set(ts))
    for item in receiver.received:
        payorch.webhooks.verify(item.body, item.signature, sub["secret"])


async def test_schedule_exhausted_means_failed(api: Api, receiver: Receiver) -> None:
    receiver.policy = lambda item, seen: 503
    sub = await subscribe(api, receiver.url, ["payment.completed"])
    await paid_payment(api)
    await receiver.wait_for(1)
    await drain(api.client)
    await api.advance(sum(RETRY_DELAYS) + 60)
    await drain(api.client)
    [delivery] = await deliveries(api, sub["id"])
    assert delivery["status"] == "failed" and delivery["nextAttemptAt"] is None
    ats = [seconds(a["at"]) for a in delivery["attempts"]]
    gaps = [round(b - a, 2) for a, b in itertools.pairwise(ats)]
    assert gaps == list(RETRY_DELAYS)  # 1m, 5m, 30m, 2h, 6h, 12h, 24h
    assert len(receiver.received) == 8


async def test_advancing_the_clock_never_waits_on_a_receivers_network(
    api: Api, keys: Keys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two days past five paid payments, with two subscriptions to a host that does not
    resolve: the advance answers while every retry it started is still resolving (it took 20 s),
    and each attempt the clock passed is recorded once it completes, stamped at its due time,
    with the next retry due from there.

    No wall-clock measurement: once the first attempts have failed, the host's lookups block
    until the test lets them go, and a retry job may wait an hour for its attempt. A clock that
    waited on the network would hang the advance (cut off, far later, by the guard below); one
    that does not answers with no retry recorded yet."""
    resolve = socket.getaddrinfo
    holding = threading.Event()  # set: lookups of the host block until `released`
    released = threading.Event()

    def unresolvable(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host in ("nonexistent.invalid", b"nonexistent.invalid"):
            if holding.is_set():
                released.wait(timeout=120)
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return resolve(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", unresolvable)
    subs = [
        await subscribe(api, f"https://nonexistent.invalid/hook/{n}", ["payment.completed"])
        for n in (1, 2)
    ]
    for _ in range(5):
        await paid_payment(api)
    await drain(api.client)  # the first attempts: failed when the resolver gave up
    holding.set()
    monkeypatch.setattr(api.client.server.app[ENGINE], "_retry_wait", 3600.0)
    try:
        async with asyncio.timeout(60):  # a hang guard, not a measurement
            await api.advance(2 * 86_400)
        for sub in subs:  # answered with every retry still in flight
            listed = await deliveries(api, sub["id"])
            assert [len(delivery["attempts"]) for delivery in listed] == [1] * 5
    finally:
        released.set()
    await drain(api.client)
    for sub in subs:
        listed = await deliveries(api, sub["id"])
        assert len(listed) == 5
        for delivery in listed:
            first, retry = delivery["attempts"]
            assert seconds(retry["at"]) - seconds(first["at"]) == RETRY_DELAYS[0]
            assert retry["httpStatus"] is None and "nonexistent.invalid" in retry["error"]
            assert delivery["status"] == "pending"
            assert seconds(delivery["nextAttemptAt"]) == seconds(retry["at"]) + RETRY_DELAYS[1]


async def test_410_gone_deactivates(api: Api, keys: Keys, receiver: Receiver) -> None:
    receiver.policy = lambda item, seen: 410
    sub = await subscribe(api, receiver.url, ["payment.completed"])
    await paid_payment(api)
    await receiver.wait_for(1)
    await drain(api.client)
    [delivery] = await deliveries(api, sub["id"])
    assert delivery["status"] == "failed" and delivery["attempts"][0]["httpStatus"] == 410
    _status, body, _ = await api.get(f"/webhooks/{sub['id']}", keys.sandbox_sk)
    assert body["active"] is False and body["deactivatedReason"] == "410 Gone"
    await api.advance(3 * 86_400)
    await paid_payment(api)
    await drain(api.client)
    assert len(receiver.received) == 1
    assert len(await deliveries(api, sub["id"])) == 1


async def test_replay_is_a_new_freshly_signed_attempt(
    api: Api, keys: Keys, receiver: Receiver
) -> None:
    sub = await subscribe(api, receiver.url, ["payment.completed"])
    await paid_payment(api)
    first = (await receiver.wait_for(1))[0]
    await drain(api.client)
    status, delivery, _ = await api.post(
        f"/webhooks/{sub['id']}/deliveries/{first.delivery_id}/replay", keys.sandbox_sk
    )
    assert status == 200, delivery
    assert delivery["attemptCount"] == 2 and delivery["attempts"][1]["trigger"] == "replay"
    assert delivery["attempts"][1]["httpStatus"] == 200 and delivery["status"] == "succeeded"
    second = receiver.received[1]
    assert second.delivery_id == first.delivery_id and second.body == first.body
    assert parse_header(second.signature)["t"] != parse_header(first.signature)["t"]
    stripe.WebhookSignature.verify_header(
        second.body.decode(), second.signature, sub["secret"], 300
    )


async def test_replay_of_a_failed_delivery_succeeds(
    api: Api, keys: Keys, receiver: Receiver
) -> None:
    receiver.policy = lambda item, seen: 500 if seen == 0 else 200
    sub = await subscribe(api, receiver.url, ["payment.completed"])
    await paid_payment(api)
    item = (await receiver.wait_for(1))[0]
    await drain(api.client)
    _status, delivery, _ = await api.post(
        f"/webhooks/{sub['id']}/deliveries/{item.delivery_id}/replay", keys.sandbox_sk
    )
    assert delivery["status"] == "succeeded" and delivery["nextAttemptAt"] is None
    await api.advance(3 * 86_400)  # the pending retry was dropped
    await drain(api.client)
    assert len(receiver.received) == 2


async def test_inactive_subscription_receives_nothing(
    api: Api, keys: Keys, receiver: Receiver
) -> None:
    sub = await subscribe(api, receiver.url)
    await api.call("PATCH", f"/webhooks/{sub['id']}", keys.sandbox_sk, json={"active": False})
    await paid_payment(api)
    await drain(api.client)
    assert receiver.received == [] and await deliveries(api, sub["id"]) == []


async def test_pausing_cancels_pending_retries_and_refuses_replay(
    api: Api, keys: Keys, receiver: Receiver
) -> None:
    receiver.policy = lambda item, seen: 500
    sub = await subscribe(api, receiver.url, ["payment.completed"])
    await paid_payment(api)
    item = (await receiver.wait_for(1))[0]
    await drain(api.client)
    await api.call("PATCH", f"/webhooks/{sub['id']}", keys.sandbox_sk, json={"active": False})
    await api.advance(120)
    await drain(api.client)
    [delivery] = await deliveries(api, sub["id"])
    assert delivery["status"] == "cancelled" and "inactive" in delivery["cancelReason"]
    assert len(receiver.received) == 1
    status, body, _ = await api.post(
        f"/webhooks/{sub['id']}/deliveries/{item.delivery_id}/replay", keys.sandbox_sk
    )
    assert_error(status, body, 400, "invalid_request")


async def test_managed_inbox_stores_and_lists(api: Api, keys: Keys, receiver: Receiver) -> None:
    sub = await subscribe(api, None, ["payment.completed"])
    tx = await paid_payment(api)
    await drain(api.client)
    [delivery] = await deliveries(api, sub["id"])
    assert delivery["status"] == "stored" and delivery["managed"] is True
    assert delivery["attempts"] == [] and delivery["event"]["data"]["id"] == tx["transactionId"]
    status, replayed, _ = await api.post(
        f"/webhooks/{sub['id']}/deliveries/{delivery['id']}/replay", keys.sandbox_sk
    )
    assert status == 200 and replayed["attempts"][0]["stored"] is True
    status, page, _ = await api.get(
        f"/webhooks/{sub['id']}/deliveries?status=stored", keys.sandbox_sk
    )
    assert page["pagination"]["total"] == 1


async def test_unreachable_endpoint_and_timeout_are_recorded(
    api: Api, receiver: Receiver, unused_tcp_port: int
) -> None:
    dead = await subscribe(api, f"http://127.0.0.1:{unused_tcp_port}/hooks", ["payment.completed"])
    receiver.delay = 1.0
    slow = await subscribe(api, receiver.url, ["payment.completed"])
    api.client.server.app[ENGINE].timeout = 0.3
    await paid_payment(api)
    await receiver.wait_for(1)
    await drain(api.client)
    [refused] = await deliveries(api, dead["id"])
    assert refused["status"] == "pending" and refused["attempts"][0]["httpStatus"] is None
    # A sentence, not aiohttp's `ClientConnectorError: Cannot connect to host ... ssl:default`.
    assert refused["attempts"][0]["error"] == f"connection refused by 127.0.0.1:{unused_tcp_port}"
    [timed_out] = await deliveries(api, slow["id"])
    assert timed_out["attempts"][0]["error"] == "timed out after 0.3 s"
    assert timed_out["status"] == "pending" and timed_out["nextAttemptAt"]


async def test_a_failed_tls_handshake_is_recorded_as_one(api: Api, receiver: Receiver) -> None:
    """An https:// URL whose endpoint speaks plain HTTP: the handshake fails, and the attempt
    says so with the TLS library's reason (rather than aiohttp's exception text)."""
    tls_url = receiver.url.replace("http://", "https://", 1)
    sub = await subscribe(api, tls_url, ["payment.completed"])
    await paid_payment(api)
    await drain(api.client)
    [delivery] = await deliveries(api, sub["id"])
    error = delivery["attempts"][0]["error"]
    assert error.startswith("TLS handshake failed: "), error
    assert "ssl:default" not in error and "Error" not in error
    assert receiver.received == []


async def test_redirect_is_a_failure(api: Api, receiver: Receiver) -> None:
    receiver.policy = lambda item, seen: 302
    sub = await subscribe(api, receiver.url, ["payment.completed"])
    await paid_payment(api)
    await receiver.wait_for(1)
    await drain(api.client)
    [delivery] = await deliveries(api, sub["id"])
    assert delivery["status"] == "pending" and delivery["attempts"][0]["httpStatus"] == 302


async def test_deleted_subscription_cancels_its_retries(
    api: Api, keys: Keys, receiver: Receiver
) -> None:
    receiver.policy = lambda item, seen: 500
    sub = await subscribe(api, receiver.url, ["payment.completed"])
    await paid_payment(api)
    item = (await receiver.wait_for(1))[0]
    await drain(api.client)
    await api.call("DELETE", f"/webhooks/{sub['id']}", keys.sandbox_sk)
    await api.advance(3600)
    await drain(api.client)
    assert len(receiver.received) == 1
    stored = api.client.server.app[STORE].table("webhook_deliveries").get(item.delivery_id)
    assert stored["status"] == "cancelled" and stored["cancelReason"] == "subscription deleted"


async def test_a_rolled_back_state_change_delivers_nothing(api: Api, receiver: Receiver) -> None:
    await subscribe(api, receiver.url)
    app = api.client.server.app
    with pytest.raises(RuntimeError), app[STORE].batch():
        app[BUS].emit("mer_mercadoazul", "sandbox", "claim.opened", {"id": "CLM-X"})
        raise RuntimeError("the state change fails after its event")
    await drain(api.client)
    assert receiver.received == []


async def test_different_endpoints_are_served_concurrently(api: Api, aiohttp_server: Any) -> None:
    slow, fast = await start_receiver(aiohttp_server), await start_receiver(aiohttp_server)
    slow.gate = asyncio.Event()  # stuck until released
    await subscribe(api, slow.url, ["payment.completed"])
    await subscribe(api, fast.url, ["payment.completed"])
    for _ in range(20):
        await paid_payment(api)
    await fast.wait_for(20, timeout=10)  # all of them while the slow endpoint holds its first
    assert len(slow.received) < 20
    slow.gate.set()
    await slow.wait_for(20, timeout=10)


# -- restarts -----------------------------------------------------------------------------------


async def _start(settings: Settings) -> tuple[TestClient, Api]:
    client = TestClient(TestServer(create_app(settings)))
    await client.start_server()
    return client, Api(client)


async def test_pending_retries_survive_a_restart(settings: Settings, receiver: Receiver) -> None:
    receiver.policy = lambda item, seen: 500 if seen == 0 else 200
    client, api = await _start(settings)
    try:
        sub = await subscribe(api, receiver.url, ["payment.completed"])
        await paid_payment(api)
        await receiver.wait_for(1)
        await drain(client)
    finally:
        await client.close()
    client, api = await _start(settings)
    try:
        await drain(client)
        assert len(receiver.received) == 1  # not re-sent at start: its retry job is waiting
        await api.advance(60)
        await receiver.wait_for(2)
        await drain(client)
        [delivery] = await deliveries(api, sub["id"])
        assert delivery["status"] == "succeeded"
        assert [a["httpStatus"] for a in delivery["attempts"]] == [500, 200]
    finally:
        await client.close()


async def test_a_delivery_in_flight_at_shutdown_is_sent_after_restart(
    settings: Settings, receiver: Receiver
) -> None:
    receiver.delay = 30.0  # the first attempt hangs until the server goes away
    client, api = await _start(settings)
    try:
        sub = await subscribe(api, receiver.url, ["payment.completed"])
        await paid_payment(api)
        await receiver.wait_for(1)
    finally:
        await client.close()
    receiver.delay = 0
    client, api = await _start(settings)
    try:
        await receiver.wait_for(2)
        await drain(client)
        [delivery] = await deliveries(api, sub["id"])
        assert delivery["status"] == "succeeded" and delivery["attemptCount"] == 1
        assert receiver.received[0].delivery_id == receiver.received[1].delivery_id
    finally:
        await client.close()


# -- volume -------------------------------------------------------------------------------------


async def test_500_events_with_30_percent_failures_all_arrive(
    api: Api, keys: Keys, receiver: Receiver, client: TestClient
) -> None:
    # Deterministic 30 %: the first attempt of 3 deliveries in every 10 (by arrival) fails.
    arrivals: dict[str, int] = {}

    def policy(item: Any, seen: int) -> int:
        number = arrivals.setdefault(item.delivery_id, len(arrivals))
        return 500 if seen == 0 and number % 10 in (1, 4, 7) else 200

    receiver.policy = policy
    sub = await subscribe(api, receiver.url, ["claim.opened"])
    app = client.server.app
    with app[STORE].batch():
        for n in range(500):  # 500 events through the real bus, in one state change
            app[BUS].emit("mer_mercadoazul", "sandbox", "claim.opened", {"id": f"CLM-{n}"})
    await receiver.wait_for(500, timeout=30)
    await drain(client)
    failed_first = len(receiver.received) - len(arrivals)
    assert len(arrivals) == 500 and failed_first == 0
    await api.advance(sum(RETRY_DELAYS) + 60)
    await drain(client)
    ok = {r.delivery_id for r in receiver.received if policy(r, 1) == 200}
    assert len(ok) == 500
    _status, page, _ = await api.get(
        f"/webhooks/{sub['id']}/deliveries?status=succeeded&limit=1", keys.sandbox_sk
    )
    assert page["pagination"]["total"] == 500
    retried = [r for r in receiver.received if arrivals[r.delivery_id] % 10 in (1, 4, 7)]
    assert len(retried) == 2 * 150


async def test_any_resource_event_is_delivered(api: Api, receiver: Receiver) -> None:
    """Nothing in the engine is payment-specific: a payout event goes out like any other."""
    await subscribe(api, receiver.url, ["payout.failed"])
    app = api.client.server.app
    with app[STORE].batch():
        app[BUS].emit(
            "mer_mercadoazul", "sandbox", "payout.failed", {"id": "po_1", "failureReason": "x"}
        )
    [item] = await receiver.wait_for(1)
    assert item.event_type == "payout.failed" and item.json()["data"]["failureReason"] == "x"


async def test_each_attempt_records_the_signature_header_sent(api: Api, receiver: Receiver) -> None:
    sub = await subscribe(api, receiver.url, ["payment.completed"])
    await paid_payment(api)
    [item] = await receiver.wait_for(1)
    await drain(api.client)
    [delivery] = await deliveries(api, sub["id"])
    assert delivery["attempts"][0]["signatureHeader"] == item.signature
