"""The simulator clock (design.md 1.3 and 2.1): GET /_sim/clock, POST /_sim/clock/advance, due jobs
run in time order, and the clock, jobs and data surviving a restart on the same data dir."""

from __future__ import annotations

import time
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from simulator.app import create_app
from simulator.clock import parse_iso
from simulator.domain.states import SIMULATE_ACTIONS
from simulator.http.keys import BUS
from simulator.settings import Settings
from tests.conftest import Api, Keys, assert_error, get_claim

DAY = 86_400


async def clock(api: Api, key: str) -> dict[str, Any]:
    status, body, _ = await api.get("/_sim/clock", key)
    assert status == 200, body
    return body


def ts(body: dict[str, Any]) -> float:
    return parse_iso(body["now"]).timestamp()


async def status_of(api: Api, tx_id: str, key: str) -> str:
    status, body, _ = await api.get(f"/payments/{tx_id}", key)
    assert status == 200, body
    return body["status"]


def record_events(client: TestClient) -> list[dict[str, Any]]:
    """Pay-in lifecycle events from now on (settlement events follow the UTC calendar: left out)."""
    seen: list[dict[str, Any]] = []

    def record(event: dict[str, Any]) -> None:
        if event["type"].startswith(("payment.", "chargeback.", "claim.")):
            seen.append(event)

    client.server.app[BUS].subscribe(record)
    return seen


# -- GET /_sim/clock ----------------------------------------------------------------------------


@pytest.mark.real_wall_clock
async def test_clock_shape(api: Api, keys: Keys) -> None:
    body = await clock(api, keys.sandbox_sk)
    assert set(body) == {"now", "offsetSeconds"}
    assert body["now"].endswith("Z")
    assert body["offsetSeconds"] == 0
    assert abs(ts(body) - time.time()) < 5  # a fresh data dir starts at real time


async def test_clock_accepts_an_access_token(api: Api, keys: Keys) -> None:
    status, token, _ = await api.post(
        "/auth/token", json={"apiKey": keys.sandbox_pk, "secretKey": keys.sandbox_sk}
    )
    assert status == 200, token
    await clock(api, token["accessToken"])
    status, body, _ = await api.post(
        "/_sim/clock/advance", token["accessToken"], json={"seconds": 10}
    )
    assert status == 200 and body["offsetSeconds"] == pytest.approx(10, abs=1)


# -- POST /_sim/clock/advance ------------------------------------------------------------------


@pytest.mark.parametrize("seconds", [1, 0.5, 3600, 45 * DAY])
async def test_advance_moves_now_by_that_much(api: Api, keys: Keys, seconds: float) -> None:
    before = await clock(api, keys.sandbox_sk)
    body = await api.advance(seconds)
    assert set(body) == {"now", "offsetSeconds"}
    assert ts(body) - ts(before) == pytest.approx(seconds, abs=0.5)
    assert body["offsetSeconds"] == pytest.approx(seconds, abs=0.5)
    after = await clock(api, keys.sandbox_sk)
    assert after["offsetSeconds"] == body["offsetSeconds"]
    assert ts(after) >= ts(body)


async def test_advances_add_up(api: Api, keys: Keys) -> None:
    before = await clock(api, keys.sandbox_sk)
    for _ in range(5):
        await api.advance(60)
    after = await clock(api, keys.sandbox_sk)
    assert ts(after) - ts(before) == pytest.approx(300, abs=1)
    assert after["offsetSeconds"] == pytest.approx(300, abs=1)


async def test_due_jobs_run_in_time_order(api: Api, keys: Keys, client: TestClient) -> None:
    seen = record_events(client)
    spei = (await api.pay())["transactionId"]  # created first, deadline in 72 h
    card = (await api.pay(paymentMethodId="sbx_card", amount=10))["transactionId"]  # 1 h
    status, body, _ = await api.post(
        "/payments",
        keys.sandbox_sk,
        json={"amount": 20, "paymentMethodId": "1001"},
        headers={"Sandbox-Simulate": "paid"},
    )
    assert status == 200, body
    paid = body["transactionId"]  # created last, completed 3 s later
    start = ts(await clock(api, keys.sandbox_sk))
    await api.advance(73 * 3600)  # one advance: every job on the way, in order
    # In order: what the simulate table fires for each job's transition (read from the table, so
    # an event type added to a row changes nothing here).
    completed, expired = SIMULATE_ACTIONS["paid"].events, SIMULATE_ACTIONS["expired"].events
    assert [(e["type"], e["data"]["id"]) for e in seen] == [
        *((name, paid) for name in completed),
        *((name, card) for name in expired),
        *((name, spei) for name in expired),
    ]
    # Each job saw its own due time, not the end of the advance.
    stamps = [parse_iso(e["createdAt"]).timestamp() for e in seen]
    assert stamps == sorted(stamps)
    card_at, spei_at = len(completed), len(completed) + len(expired)
    assert stamps[0] - start == pytest.approx(3, abs=2)
    assert stamps[card_at] - start == pytest.approx(3600, abs=2)
    assert stamps[spei_at] - start == pytest.approx(72 * 3600, abs=2)
    for tx_id, expected in ((paid, "completed"), (card, "expired"), (spei, "expired")):
        assert await status_of(api, tx_id, keys.sandbox_sk) == expected


async def test_jobs_created_on_the_way_run_in_the_same_advance(
    api: Api, keys: Keys, client: TestClient
) -> None:
    """A Sandbox-Simulate chargeback completes (+3 s), opens a claim, and the claim resolves
    7 days later: all within one advance of 8 days."""
    seen = record_events(client)
    status, body, _ = await api.post(
        "/payments",
        keys.sandbox_sk,
        json={"amount": 100, "paymentMethodId": "1001"},
        headers={"Sandbox-Simulate": "chargeback"},
    )
    assert status == 200, body
    await api.advance(8 * DAY)
    assert [e["type"] for e in seen] == [
        "payment.completed",
        "payment.captured",
        "chargeback.created",
        "claim.opened",
        "claim.resolved",
    ]
    resolved = seen[-1]
    assert resolved["data"]["status"] == "resolved"
    assert resolved["data"]["resolution"] == "merchant_lost"
    opened_at = parse_iso(seen[3]["createdAt"]).timestamp()
    assert parse_iso(resolved["createdAt"]).timestamp() - opened_at == pytest.approx(7 * DAY, 1)


async def test_advance_with_nothing_due(api: Api, keys: Keys) -> None:
    tx = (await api.pay())["transactionId"]
    await api.advance(3600)
    assert await status_of(api, tx, keys.sandbox_sk) == "pending"


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({}, "missing_field"),
        ({"seconds": 0}, "invalid_request"),
        ({"seconds": -5}, "invalid_request"),
        ({"seconds": -0.001}, "invalid_request"),
        ({"seconds": "10"}, "invalid_request"),
        ({"seconds": None}, "invalid_request"),
        ({"seconds": True}, "invalid_request"),
        ({"seconds": [10]}, "invalid_request"),
        ({"seconds": 11 * 365 * DAY}, "invalid_request"),
        ({"seconds": 10, "extra": 1}, "invalid_request"),
    ],
)
async def test_advance_refuses_bad_seconds(
    api: Api, keys: Keys, body: dict[str, Any], code: str
) -> None:
    status, out, _ = await api.post("/_sim/clock/advance", keys.sandbox_sk, json=body)
    error = assert_error(status, out, 400, code)
    assert error.get("param") in ("seconds", "extra")
    assert (await clock(api, keys.sandbox_sk))["offsetSeconds"] == 0


@pytest.mark.parametrize(
    ("data", "content_type", "status", "code"),
    [
        ("", "application/json", 400, "invalid_request"),
        ("{seconds: 1", "application/json", 400, "invalid_json"),
        ("[10]", "application/json", 400, "invalid_request"),
        ('{"seconds": 10}', "text/plain", 415, "content_type_required"),
    ],
)
async def test_advance_refuses_bad_bodies(
    api: Api, keys: Keys, data: str, content_type: str, status: int, code: str
) -> None:
    got, out, _ = await api.post(
        "/_sim/clock/advance", keys.sandbox_sk, data=data, headers={"Content-Type": content_type}
    )
    assert_error(got, out, status, code)
    assert (await clock(api, keys.sandbox_sk))["offsetSeconds"] == 0


async def test_clock_refuses_other_credentials(api: Api, keys: Keys) -> None:
    for method, path, json in (
        ("GET", "/_sim/clock", None),
        ("POST", "/_sim/clock/advance", {"seconds": 10}),
    ):
        status, body, _ = await api.call(method, path, keys.live_sk, json=json)
        assert_error(status, body, 400, "production_key_refused")
        status, body, _ = await api.call(method, path, None, json=json)
        assert_error(status, body, 401, "missing_credentials")
        status, body, _ = await api.call(method, path, "sk_test_notakey", json=json)
        assert_error(status, body, 401, "invalid_api_key")
        status, body, _ = await api.call(method, path, keys.sandbox_pk, json=json)
        assert_error(status, body, 403, "key_kind_not_allowed")
    assert (await clock(api, keys.sandbox_sk))["offsetSeconds"] == 0


async def test_the_clock_is_one_per_server(api: Api, keys: Keys) -> None:
    """Another merchant's sandbox key sees (and moves) the same simulated time."""
    await api.advance(100, key=keys.other_sk)
    assert (await clock(api, keys.sandbox_sk))["offsetSeconds"] == pytest.approx(100, abs=1)


# -- restart on the same data dir ---------------------------------------------------------------


async def test_restart_keeps_offset_jobs_and_data(
    aiohttp_client: Any, client: TestClient, settings: Settings, keys: Keys
) -> None:
    api = Api(client)
    # Data: a settled payment refunded in part (an open claim), one failed, one pending.
    txs = []
    for _ in range(2):
        tx = (await api.pay(amount=100))["transactionId"]
        status, body, _ = await api.post(
            f"/payments/{tx}/simulate", keys.sandbox_sk, json={"action": "paid"}
        )
        assert status == 200, body
        txs.append(tx)
    failed = (await api.pay())["transactionId"]
    await api.post(f"/payments/{failed}/simulate", keys.sandbox_sk, json={"action": "failed"})
    await api.advance(3 * DAY)
    status, claim, _ = await api.post(
        f"/payments/{txs[0]}/refund", keys.sandbox_sk, json={"amount": 171, "reason": "other"}
    )
    assert status == 200, claim
    # Jobs: an outcome scheduled 3 s after creation, not yet run.
    status, body, _ = await api.post(
        "/payments",
        keys.sandbox_sk,
        json={"amount": 30, "paymentMethodId": "1001"},
        headers={"Sandbox-Simulate": "paid"},
    )
    assert status == 200, body
    scheduled = body["transactionId"]
    before_clock = await clock(api, keys.sandbox_sk)
    _, before_list, _ = await api.get("/payments", keys.sandbox_sk)
    _, before_balance, _ = await api.get("/me/balance", keys.sandbox_sk)
    _, before_claim = await get_claim(api, claim["refundId"], keys.sandbox_sk)
    await client.close()

    restarted = Api(await aiohttp_client(create_app(settings)))
    after_clock = await clock(restarted, keys.sandbox_sk)
    assert after_clock["offsetSeconds"] == pytest.approx(before_clock["offsetSeconds"], abs=0.01)
    assert ts(after_clock) >= ts(before_clock)
    assert ts(after_clock) - ts(before_clock) < 5
    _, after_list, _ = await restarted.get("/payments", keys.sandbox_sk)
    assert after_list == before_list
    _, after_balance, _ = await restarted.get("/me/balance", keys.sandbox_sk)
    assert after_balance == before_balance
    status, after_claim = await get_claim(restarted, claim["refundId"], keys.sandbox_sk)
    assert status == 200 and after_claim == before_claim

    # The pending jobs came back: the simulated outcome and the claim's resolution.
    assert await status_of(restarted, scheduled, keys.sandbox_sk) == "pending"
    seen = record_events(restarted.client)
    await restarted.advance(5)
    assert await status_of(restarted, scheduled, keys.sandbox_sk) == "completed"
    await restarted.advance(3600)
    status, resolved = await get_claim(restarted, claim["refundId"], keys.sandbox_sk)
    assert resolved["status"] == "resolved"
    assert [e["type"] for e in seen] == ["payment.completed", "payment.captured", "claim.resolved"]
    # And new work keeps going after a restart.
    fresh = (await restarted.pay())["transactionId"]
    status, body, _ = await restarted.post(
        f"/payments/{fresh}/refund", keys.sandbox_sk, json={"amount": 1}
    )
    assert_error(status, body, 400, "invalid_request")  # still pending


async def test_restart_keeps_an_offset_moved_several_times(
    aiohttp_client: Any, client: TestClient, settings: Settings, keys: Keys
) -> None:
    api = Api(client)
    await api.advance(DAY)
    await api.advance(DAY)
    await client.close()
    second = Api(await aiohttp_client(create_app(settings)))
    assert (await clock(second, keys.sandbox_sk))["offsetSeconds"] == pytest.approx(2 * DAY, 1)
    await second.advance(DAY)
    await second.client.close()
    third = Api(await aiohttp_client(create_app(settings)))
    assert (await clock(third, keys.sandbox_sk))["offsetSeconds"] == pytest.approx(3 * DAY, 1)


async def test_equal_time_jobs_keep_creation_order_across_restarts(
    aiohttp_client: Any, client: TestClient, settings: Settings, keys: Keys
) -> None:
    """Two slow payments confirmed by the same poll run complete in creation order, even when a
    restart came between their creations and another one after (jobs keep their sequence)."""

    async def slow(api: Api, header: str) -> str:
        status, body, _ = await api.post(
            "/payments",
            keys.sandbox_sk,
            json={"amount": 10, "paymentMethodId": "1001"},
            headers={"Sandbox-Simulate": header},
        )
        assert status == 200, body
        return body["transactionId"]

    api = Api(client)
    now = ts(await clock(api, keys.sandbox_sk))
    await api.advance((now // 300 + 1) * 300 + 1 - now)  # just past a poll run
    for _ in range(4):
        await slow(api, "paid")  # jobs that run (and leave the store) before the restart
    first = await slow(api, "slow_payment")
    await api.advance(5)
    await client.close()

    second = Api(await aiohttp_client(create_app(settings)))
    later = await slow(second, "slow_payment")  # the same poll run confirms both
    await second.client.close()

    third = Api(await aiohttp_client(create_app(settings)))
    seen = record_events(third.client)
    await third.advance(300)
    assert [e["data"]["id"] for e in seen] == [first, later]


async def test_a_failing_job_is_dropped_not_replayed(client: Any, api: Api) -> None:
    from simulator.http.keys import CLOCK, SCHEDULER, STORE

    app = client.server.app
    calls: list[dict[str, Any]] = []

    def broken(payload: dict[str, Any]) -> None:
        calls.append(payload)
        raise RuntimeError("boom")

    app[SCHEDULER].register("test.broken", broken)
    app[SCHEDULER].schedule("test.broken", app[CLOCK].timestamp() + 1, {"n": 1})
    await api.advance(5)
    await api.advance(5)
    assert calls == [{"n": 1}]
    assert all(job["kind"] != "test.broken" for job in app[STORE].table("jobs").values())


async def test_the_control_plane_answers_under_the_api_base_url_too(api: Api, keys: Keys) -> None:
    """A client generated with the base URL /api/v1 calls /api/v1/_sim/...: same handlers, same
    validation, same errors as /_sim/..."""

    async def call(method: str, path: str, key: str, body: Any = None) -> tuple[int, Any]:
        headers = {"Authorization": f"Bearer {key}"}
        response = await api.client.request(method, path, json=body, headers=headers)
        return response.status, await response.json()

    sk = keys.sandbox_sk
    offset = (await clock(api, sk))["offsetSeconds"]
    status, body = await call("POST", "/api/v1/_sim/clock/advance", sk, {"seconds": 60})
    assert status == 200 and body["offsetSeconds"] == pytest.approx(offset + 60, abs=1), body
    status, body = await call("GET", "/api/v1/_sim/clock", sk)
    assert status == 200 and body["offsetSeconds"] == pytest.approx(offset + 60, abs=1), body
    status, body = await call("POST", "/api/v1/_sim/clock/advance", sk, {"seconds": -1})
    assert_error(status, body, 400, "invalid_request")
    status, body = await call("POST", "/api/v1/_sim/clock/advance", keys.live_sk, {"seconds": 1})
    assert_error(status, body, 400, "production_key_refused")
    status, body = await call("GET", "/api/v1/_sim/provider/TXN-NOPE", sk)
    assert_error(status, body, 404, "route_not_found")  # the provider's HTML page is not API
