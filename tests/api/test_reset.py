"""POST /_sim/reset through the public surface: a reset server answers like a fresh one, on disk
too; requests running meanwhile are waited for, requests arriving are held; streams stay open."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from simulator.app import create_app
from simulator.http.keys import DEPOSITS, RESET, SETTINGS, STORE
from simulator.settings import Settings
from tests.api.test_deposits import account, create
from tests.api.test_events_stream import next_event, open_stream
from tests.api.test_request_log import next_request, open_tail
from tests.api.webhook_receiver import Receiver, drain, paid_payment, start_receiver, subscribe
from tests.conftest import Api, Keys, assert_error

_TIMES = re.compile(r'"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"')
_REQUEST_IDS = re.compile(r'"req_[0-9a-f]{24}"')
_ORIGIN = re.compile(r"http://127\.0\.0\.1:\d+")


async def reset(api: Api, key: str) -> dict[str, Any]:
    status, body, _ = await api.post("/_sim/reset", key)
    assert status == 200, body
    return body


async def journey(api: Api, keys: Keys) -> list[str]:
    """The same calls, each answer with its times and request ids blanked."""
    answers = []
    calls: list[tuple[str, str, Any]] = [
        ("POST", "/payments", {"amount": 50, "paymentMethodId": "1001"}),
        ("POST", "/webhooks", {"events": "*"}),
        ("GET", "/payments", None),
        ("GET", "/me/balance", None),
        ("GET", "/webhooks", None),
        ("GET", "/_sim/clock", None),
    ]
    for method, path, body in calls:
        status, out, _ = await api.call(method, path, keys.sandbox_sk, json=body)
        text = json.dumps(out, sort_keys=True)
        text = _ORIGIN.sub("ORIGIN", _REQUEST_IDS.sub('"req"', _TIMES.sub('"T"', text)))
        answers.append(f"{status} {method} {path} {text}")
    return answers


async def test_a_reset_server_answers_like_a_fresh_one(
    api: Api, keys: Keys, aiohttp_client: Any, tmp_path: Path
) -> None:
    # A fresh server with the same settings (seed included), on a data dir of its own.
    fresh = Api(await aiohttp_client(create_app(_settings(tmp_path / "fresh"))))
    expected = await journey(fresh, keys)

    # Fill the server with everything a reset must forget.
    before = await paid_payment(api)
    await api.post("/payments", keys.sandbox_sk, json={"amount": 7, "paymentMethodId": "1001"},
                   headers={"Idempotency-Key": "k-1"})  # fmt: skip
    _, hook, _ = await api.post("/webhooks", keys.sandbox_sk, json={"events": "*"})
    await api.post(f"/webhooks/{hook['id']}/rotate-secret", keys.sandbox_sk)
    _, pair, _ = await api.post(
        "/auth/token", json={"apiKey": keys.sandbox_pk, "secretKey": keys.sandbox_sk}
    )
    await account(api)
    await api.advance(86_400 * 3)
    await api.pay(keys.other_sk)

    body = await reset(api, keys.sandbox_sk)
    assert body["reset"] is True and body["clock"]["offsetSeconds"] == 0

    # Gone: the payment, the subscription, the tokens, the clock offset, the key's record.
    status, out, _ = await api.get(f"/payments/{before['transactionId']}", keys.sandbox_sk)
    assert_error(status, out, 404, "transaction_not_found")
    status, out, _ = await api.get(f"/webhooks/{hook['id']}", keys.sandbox_sk)
    assert_error(status, out, 404, "webhook_not_found")
    status, out, _ = await api.post("/auth/refresh", json={"refreshToken": pair["refreshToken"]})
    assert status == 401, out
    status, out, _ = await api.get("/ping", pair["accessToken"])
    assert status == 401, out
    status, out, _ = await api.get("/me/deposit-accounts", keys.sandbox_sk)
    assert out["pagination"]["total"] == 0
    status, out, _ = await api.post(
        "/payments",
        keys.sandbox_sk,
        json={"amount": 8, "paymentMethodId": "1001"},
        headers={"Idempotency-Key": "k-1"},
    )
    assert status == 200 and out["amount"] == 8  # a new operation, no conflict with the old body
    # The request log holds the reset (and what came after) only.
    status, log, _ = await api.get("/_sim/requests", keys.sandbox_sk)
    assert log["data"][-1]["path"] == "/_sim/reset"

    # And the same calls answer as on the fresh server: same ids from the seeded generator.
    await reset(api, keys.sandbox_sk)
    assert await journey(api, keys) == expected
    # The keys still work, on a fresh access token too.
    status, pair, _ = await api.post(
        "/auth/token", json={"apiKey": keys.sandbox_pk, "secretKey": keys.sandbox_sk}
    )
    status, out, _ = await api.get("/ping", pair["accessToken"])
    assert status == 200, out


async def test_the_reset_is_on_disk(api: Api, keys: Keys, aiohttp_client: Any) -> None:
    tx = await api.pay()
    await api.advance(3600)
    await reset(api, keys.sandbox_sk)
    settings = api.client.app[SETTINGS]
    await api.client.close()  # the app's clean-up closes its store
    again = Api(await aiohttp_client(create_app(settings)))
    status, out, _ = await again.get(f"/payments/{tx['transactionId']}", keys.sandbox_sk)
    assert_error(status, out, 404, "transaction_not_found")
    status, clock, _ = await again.get("/_sim/clock", keys.sandbox_sk)
    assert clock["offsetSeconds"] == 0


async def test_a_reset_waits_for_running_requests_and_holds_new_ones(api: Api, keys: Keys) -> None:
    started = asyncio.Event()

    async def slow_provisioning() -> None:
        started.set()
        await asyncio.sleep(0.3)

    api.client.server.app[DEPOSITS].before_insert = slow_provisioning
    running = asyncio.create_task(create(api, "before"))
    await started.wait()
    resetting = asyncio.create_task(api.post("/_sim/reset", keys.sandbox_sk))
    await asyncio.sleep(0.05)
    assert not api.client.server.app[RESET].gate_open
    arriving = asyncio.create_task(api.pay())  # held at the gate until the reset is done
    status, out = await running
    assert status == 201, out  # finished, in the old world
    assert (await resetting)[0] == 200
    after = await arriving
    # The account made before the reset is gone; the payment made after it is there.
    status, page, _ = await api.get("/me/deposit-accounts", keys.sandbox_sk)
    assert page["pagination"]["total"] == 0
    status, _, _ = await api.get(f"/payments/{after['transactionId']}", keys.sandbox_sk)
    assert status == 200


async def test_a_reset_gives_up_on_requests_that_do_not_finish(api: Api, keys: Keys) -> None:
    tx = await api.pay()
    started = asyncio.Event()

    async def stuck_provisioning() -> None:
        started.set()
        await asyncio.sleep(1.0)

    api.client.server.app[DEPOSITS].before_insert = stuck_provisioning
    api.client.server.app[RESET].wait_seconds = 0.1
    running = asyncio.create_task(create(api, "slow"))
    await started.wait()
    status, out, _ = await api.post("/_sim/reset", keys.sandbox_sk)
    assert assert_error(status, out, 409, "requests_in_flight")["details"] == {"running": 1}
    assert api.client.server.app[RESET].gate_open
    assert (await running)[0] == 201
    status, _, _ = await api.get(f"/payments/{tx['transactionId']}", keys.sandbox_sk)
    assert status == 200  # nothing changed


async def test_production_credentials_cannot_reset(api: Api, keys: Keys) -> None:
    tx = await api.pay(keys.live_sk)
    status, out, _ = await api.post("/_sim/reset", keys.live_sk)
    assert_error(status, out, 400, "production_key_refused")
    status, _, _ = await api.get(f"/payments/{tx['transactionId']}", keys.live_sk)
    assert status == 200


async def test_streams_stay_open_and_the_new_world_runs(
    api: Api, keys: Keys, aiohttp_server: Any
) -> None:
    receiver: Receiver = await start_receiver(aiohttp_server)
    await subscribe(api, receiver.url)
    pending = await api.pay()  # its expiry job must not survive the reset
    events = await open_stream(api, keys.sandbox_sk)
    tail = await open_tail(api, keys.sandbox_sk)
    await reset(api, keys.sandbox_sk)
    assert (await next_request(tail))["path"] == "/_sim/reset"
    status, out, _ = await api.get(f"/payments/{pending['transactionId']}", keys.sandbox_sk)
    assert_error(status, out, 404, "transaction_not_found")
    assert len(api.client.server.app[STORE].table("jobs")) == 0
    # The scheduler and the webhook engine of the new world run: a new subscription gets its
    # deliveries, the old one (gone) none.
    hook = await subscribe(api, receiver.url)
    received_before = len(receiver.received)
    tx = await paid_payment(api)
    assert (await next_event(events))["data"]["id"] == tx["transactionId"]
    got = await receiver.wait_for(received_before + 2)
    await drain(api.client)
    assert len(got) == received_before + 2
    status, listed, _ = await api.get(f"/webhooks/{hook['id']}/deliveries", keys.sandbox_sk)
    assert {d["status"] for d in listed["data"]} == {"succeeded"}
    assert (await api.advance(3600))["offsetSeconds"] == 3600
    for response in (events, tail):
        response.close()


def _settings(data_dir: Path) -> Settings:
    return Settings(data_dir=data_dir, tick_seconds=0, seed=1234, rate_limit=False)
