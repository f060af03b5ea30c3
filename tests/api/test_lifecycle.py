"""Transaction lifecycle through the HTTP API: the simulate table, Sandbox-Simulate outcomes,
deadlines, and production outcomes from the simulated providers (spec "States and transitions",
design.md 2.2).

Events are observed through the app's event bus (a listener subscribed per test): the SSE stream
that will expose them over HTTP does not exist yet.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from simulator.clock import parse_iso
from simulator.domain.states import SIMULATE_ACTIONS
from simulator.http.keys import BUS
from tests.conftest import Api, Keys, assert_error, get_claim

POLL = 300  # the reconciliation poll runs every 5 minutes of simulated time
CPF = "529.982.247-25"


LIFECYCLE_EVENTS = ("payment.", "chargeback.", "claim.")


def fires(*actions: str, simulator: bool = True) -> list[str]:
    """What the simulate table says these transitions fire, in order: read from the table, so an
    event type added to a row changes no test here (the table's own tests and the scenarios hold
    the rows to the spec). `simulator=False`: as a provider's answer or callback fires them."""
    return [e for a in actions for e in SIMULATE_ACTIONS[a].events_for(simulator=simulator)]


class Events:
    """Every pay-in lifecycle event the app emits from the moment the probe is attached
    (settlement and other families are left out: they follow their own calendar)."""

    def __init__(self, client: TestClient) -> None:
        self.seen: list[dict[str, Any]] = []
        client.server.app[BUS].subscribe(self._record)

    def _record(self, event: dict[str, Any]) -> None:
        if event["type"].startswith(LIFECYCLE_EVENTS):
            self.seen.append(event)

    def types(self, *, tx: str | None = None) -> list[str]:
        return [e["type"] for e in self.seen if tx is None or _tx_of(e) == tx]

    def of(self, event_type: str) -> list[dict[str, Any]]:
        return [e for e in self.seen if e["type"] == event_type]


def _tx_of(event: dict[str, Any]) -> str | None:
    data = event["data"]
    return data.get("transactionId") if event["type"].startswith("claim.") else data.get("id")


@pytest.fixture
def events(client: TestClient) -> Events:
    return Events(client)


async def status_of(api: Api, tx_id: str, key: str) -> str:
    status, body, _ = await api.get(f"/payments/{tx_id}", key)
    assert status == 200, body
    return body["status"]


async def simulate(api: Api, tx_id: str, action: Any, key: str) -> tuple[int, Any]:
    status, body, _ = await api.post(f"/payments/{tx_id}/simulate", key, json={"action": action})
    return status, body


async def to_state(api: Api, keys: Keys, state: str) -> str:
    """A fresh sandbox payment driven to `state` through the simulate endpoint."""
    tx = (await api.pay())["transactionId"]
    path = {
        "pending": [],
        "completed": ["paid"],
        "failed": ["failed"],
        "expired": ["expired"],
        "refunded": ["paid", "refunded"],
        "chargeback": ["paid", "chargeback"],
    }[state]
    for action in path:
        status, body = await simulate(api, tx, action, keys.sandbox_sk)
        assert status == 200, body
    return tx


async def align_to_poll(api: Api, keys: Keys, after: float = 1.0) -> None:
    """Move the clock to `after` seconds past a 5-minute boundary, so poll timing is exact."""
    status, body, _ = await api.get("/_sim/clock", keys.sandbox_sk)
    assert status == 200, body
    now = parse_iso(body["now"]).timestamp()
    target = (math.floor(now / POLL) + 1) * POLL + after
    await api.advance(target - now)


# -- the simulate table -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "expected_status", "fired"),
    [
        ("paid", "completed", fires("paid")),
        ("failed", "failed", fires("failed")),
        ("expired", "expired", fires("expired")),
    ],
)
async def test_simulate_from_pending(
    api: Api, keys: Keys, events: Events, action: str, expected_status: str, fired: list[str]
) -> None:
    tx = (await api.pay())["transactionId"]
    status, body = await simulate(api, tx, action, keys.sandbox_sk)
    assert status == 200, body
    assert body == {"id": tx, "status": expected_status, "eventsFired": fired}
    assert events.types(tx=tx) == fired
    for event in events.seen:
        assert event["id"].startswith("evt_") and event["environment"] == "sandbox"
        assert event["data"]["status"] == expected_status
    status, got, _ = await api.get(f"/payments/{tx}", keys.sandbox_sk)
    assert status == 200 and got["status"] == expected_status
    stamp = {"paid": "completed", "failed": "failed", "expired": "expired"}[action]
    assert stamp in got["timestamps"]


async def test_simulate_refunded_on_completed(api: Api, keys: Keys, events: Events) -> None:
    tx = await to_state(api, keys, "completed")
    status, body = await simulate(api, tx, "refunded", keys.sandbox_sk)
    assert status == 200, body
    fired = fires("refunded")
    assert body == {"id": tx, "status": "refunded", "eventsFired": fired}
    assert events.types(tx=tx)[-len(fired) :] == fired
    status, got, _ = await api.get(f"/payments/{tx}", keys.sandbox_sk)
    assert got["status"] == "refunded" and "refunded" in got["timestamps"]
    assert got["refundedAmount"] == got["amountLocal"]


async def test_simulate_chargeback_opens_a_claim(api: Api, keys: Keys, events: Events) -> None:
    tx = await to_state(api, keys, "completed")
    other = await to_state(api, keys, "completed")
    status, body = await simulate(api, tx, "chargeback", keys.sandbox_sk)
    assert status == 200, body
    fired = fires("chargeback")
    assert body == {"id": tx, "status": "completed", "eventsFired": fired}
    assert events.types(tx=tx)[-len(fired) :] == fired
    assert await status_of(api, tx, keys.sandbox_sk) == "completed"

    (opened,) = events.of("claim.opened")
    claim_id = opened["data"]["id"]
    assert claim_id.startswith("CLM-")
    status, claim = await get_claim(api, claim_id, keys.sandbox_sk)
    assert status == 200, claim
    assert claim["kind"] == "chargeback" and claim["status"] == "pending"
    assert claim["transactionId"] == tx

    status, page, _ = await api.get("/payments?status=chargeback", keys.sandbox_sk)
    assert status == 200, page
    assert [row["id"] for row in page["data"]] == [tx]
    assert page["pagination"]["total"] == 1
    status, page, _ = await api.get("/payments?status=completed", keys.sandbox_sk)
    assert {row["id"] for row in page["data"]} == {tx, other}


async def test_chargeback_twice_is_refused(api: Api, keys: Keys, events: Events) -> None:
    """One dispute per payment: a second chargeback would freeze the same money twice."""
    tx = await to_state(api, keys, "chargeback")
    before = len(events.seen)
    status, body = await simulate(api, tx, "chargeback", keys.sandbox_sk)
    error = assert_error(status, body, 400, "invalid_request")
    assert error["details"]["chargebackClaimId"].startswith("CLM-")
    assert "charged back" in error["message"]
    assert len(events.seen) == before
    status, page, _ = await api.get("/payments?status=chargeback", keys.sandbox_sk)
    assert page["pagination"]["total"] == 1


async def test_refund_after_chargeback_is_refused(api: Api, keys: Keys) -> None:
    """The buyer already has the money back through the dispute: no second way to return it."""
    tx = await to_state(api, keys, "chargeback")
    status, body = await simulate(api, tx, "refunded", keys.sandbox_sk)
    error = assert_error(status, body, 400, "invalid_request")
    assert error["details"]["chargebackClaimId"].startswith("CLM-")
    assert await status_of(api, tx, keys.sandbox_sk) == "completed"


@pytest.mark.parametrize(
    ("state", "action"),
    [
        ("pending", "refunded"),
        ("pending", "chargeback"),
        ("completed", "paid"),
        ("completed", "failed"),
        ("completed", "expired"),
        ("failed", "paid"),
        ("failed", "expired"),
        ("failed", "refunded"),
        ("expired", "paid"),
        ("expired", "failed"),
        ("expired", "chargeback"),
        ("refunded", "refunded"),
        ("refunded", "paid"),
        ("refunded", "chargeback"),
    ],
)
async def test_wrong_state_is_refused_and_changes_nothing(
    api: Api, keys: Keys, events: Events, state: str, action: str
) -> None:
    tx = await to_state(api, keys, state)
    before = len(events.seen)
    status, body = await simulate(api, tx, action, keys.sandbox_sk)
    error = assert_error(status, body, 400, "invalid_request")
    assert error["param"] == "action"
    assert error["details"]["status"] == state
    assert state in error["message"] and action in error["message"]
    assert await status_of(api, tx, keys.sandbox_sk) == state
    assert len(events.seen) == before


@pytest.mark.parametrize("action", ["settle", "PAID", "", 1, None, ["paid"]])
async def test_unknown_action(api: Api, keys: Keys, action: Any) -> None:
    tx = (await api.pay())["transactionId"]
    status, body = await simulate(api, tx, action, keys.sandbox_sk)
    error = assert_error(status, body, 400, "invalid_request")
    assert error["param"] == "action"
    assert set(error["details"]["allowed"]) == {
        "paid",
        "failed",
        "expired",
        "refunded",
        "chargeback",
    }
    assert await status_of(api, tx, keys.sandbox_sk) == "pending"


async def test_simulate_without_body(api: Api, keys: Keys) -> None:
    tx = (await api.pay())["transactionId"]
    status, body, _ = await api.post(f"/payments/{tx}/simulate", keys.sandbox_sk)
    assert_error(status, body, 400, "invalid_request")
    status, body, _ = await api.post(f"/payments/{tx}/simulate", keys.sandbox_sk, json={})
    assert_error(status, body, 400, "invalid_request")


async def test_simulate_refuses_live_and_unauthenticated_callers(api: Api, keys: Keys) -> None:
    live = (await api.pay(key=keys.live_sk))["transactionId"]
    status, body = await simulate(api, live, "paid", keys.live_sk)
    assert_error(status, body, 400, "production_key_refused")
    assert await status_of(api, live, keys.live_sk) == "pending"
    sandbox = (await api.pay())["transactionId"]
    status, body = await simulate(api, sandbox, "paid", keys.live_sk)
    assert_error(status, body, 400, "production_key_refused")
    status, body = await simulate(api, sandbox, "paid", keys.sandbox_pk)
    assert_error(status, body, 403, "key_kind_not_allowed")
    status, body, _ = await api.post(f"/payments/{sandbox}/simulate", json={"action": "paid"})
    assert_error(status, body, 401, "missing_credentials")
    assert await status_of(api, sandbox, keys.sandbox_sk) == "pending"


async def test_simulate_unknown_or_foreign_id(api: Api, keys: Keys) -> None:
    status, body = await simulate(api, "TXN-DOESNOTEXIST", "paid", keys.sandbox_sk)
    assert_error(status, body, 404, "transaction_not_found")
    foreign = (await api.pay(key=keys.other_sk))["transactionId"]
    status, body = await simulate(api, foreign, "paid", keys.sandbox_sk)
    assert_error(status, body, 404, "transaction_not_found")
    assert await status_of(api, foreign, keys.other_sk) == "pending"


# -- Sandbox-Simulate header --------------------------------------------------------------------


async def pay_with_header(api: Api, keys: Keys, value: str, **body: Any) -> str:
    payload = {"amount": 50, "paymentMethodId": "1001", **body}
    status, data, _ = await api.post(
        "/payments", keys.sandbox_sk, json=payload, headers={"Sandbox-Simulate": value}
    )
    assert status == 200, data
    assert data["status"] == "pending"
    return data["transactionId"]


@pytest.mark.parametrize(
    ("value", "expected_status", "fired"),
    [
        ("paid", "completed", fires("paid")),
        ("failed", "failed", fires("failed")),
        ("expired", "expired", fires("expired")),
        ("chargeback", "completed", fires("paid", "chargeback")),
    ],
)
async def test_sandbox_simulate_header_outcome_after_a_few_seconds(
    api: Api, keys: Keys, events: Events, value: str, expected_status: str, fired: list[str]
) -> None:
    # Past a poll boundary: the poll must not confirm the slow payment within these 10 s.
    await align_to_poll(api, keys, after=1)
    tx = await pay_with_header(api, keys, value)
    quiet = await pay_with_header(api, keys, "slow_payment")
    await api.advance(1)
    assert await status_of(api, tx, keys.sandbox_sk) == "pending"
    assert events.types() == []
    await api.advance(9)
    assert await status_of(api, tx, keys.sandbox_sk) == expected_status
    assert events.types(tx=tx) == fired
    assert await status_of(api, quiet, keys.sandbox_sk) == "pending"
    if value == "chargeback":
        status, page, _ = await api.get("/payments?status=chargeback", keys.sandbox_sk)
        assert status == 200 and [row["id"] for row in page["data"]] == [tx]
    # The outcome is final: later polls and deadlines change nothing.
    await api.advance(4 * 86_400)
    assert await status_of(api, tx, keys.sandbox_sk) == expected_status
    assert events.types(tx=tx) == fired


async def test_sandbox_simulate_header_works_on_hosted_and_sandbox_methods(
    api: Api, keys: Keys, events: Events
) -> None:
    card = await pay_with_header(api, keys, "paid", paymentMethodId="sbx_card", amount=20)
    pix = await pay_with_header(
        api, keys, "failed", paymentMethodId="sbx_pix", amount=20, documentId=CPF
    )
    await api.advance(5)
    assert await status_of(api, card, keys.sandbox_sk) == "completed"
    assert await status_of(api, pix, keys.sandbox_sk) == "failed"


async def test_slow_payment_is_confirmed_by_the_reconciliation_poll(
    api: Api, keys: Keys, events: Events
) -> None:
    await align_to_poll(api, keys, after=1)
    tx = await pay_with_header(api, keys, "slow_payment")
    await api.advance(10)
    assert await status_of(api, tx, keys.sandbox_sk) == "pending"
    await api.advance(POLL - 20)
    assert await status_of(api, tx, keys.sandbox_sk) == "pending"
    assert events.types(tx=tx) == []
    await api.advance(11)  # 301 s after creation: the poll has run
    assert await status_of(api, tx, keys.sandbox_sk) == "completed"
    assert events.types(tx=tx) == fires("paid", simulator=False)


async def test_slow_payment_confirmed_within_one_poll_interval(api: Api, keys: Keys) -> None:
    """Whatever the phase of the clock, the poll's next run confirms it (design.md 2.2)."""
    await align_to_poll(api, keys, after=POLL - 30)  # created just before a boundary
    tx = await pay_with_header(api, keys, "slow_payment")
    await api.advance(POLL + 1)
    assert await status_of(api, tx, keys.sandbox_sk) == "completed"


@pytest.mark.parametrize("value", ["PAID", "refunded", "", "paid,failed", "timeout"])
async def test_sandbox_simulate_invalid_header(api: Api, keys: Keys, value: str) -> None:
    status, body, _ = await api.post(
        "/payments",
        keys.sandbox_sk,
        json={"amount": 50, "paymentMethodId": "1001"},
        headers={"Sandbox-Simulate": value},
    )
    error = assert_error(status, body, 400, "invalid_request")
    assert error["param"] == "Sandbox-Simulate"
    status, page, _ = await api.get("/payments", keys.sandbox_sk)
    assert page["pagination"]["total"] == 0


async def test_sandbox_simulate_header_with_live_key(api: Api, keys: Keys) -> None:
    status, body, _ = await api.post(
        "/payments",
        keys.live_sk,
        json={"amount": 50, "paymentMethodId": "1001"},
        headers={"Sandbox-Simulate": "paid"},
    )
    assert_error(status, body, 400, "invalid_request")


async def test_plain_sandbox_payment_expires_at_its_due_date(
    api: Api, keys: Keys, events: Events
) -> None:
    created = await api.pay()
    tx = created["transactionId"]
    due = parse_iso(created["paymentData"]["dueDate"]).timestamp()
    status, clock, _ = await api.get("/_sim/clock", keys.sandbox_sk)
    now = parse_iso(clock["now"]).timestamp()
    assert 72 * 3600 - 60 < due - now <= 72 * 3600  # SPEI: 72 hours
    await api.advance(due - now - 30)
    assert await status_of(api, tx, keys.sandbox_sk) == "pending"
    assert events.types() == []
    await api.advance(60)
    status, got, _ = await api.get(f"/payments/{tx}", keys.sandbox_sk)
    assert status == 200 and got["status"] == "expired"
    assert events.types(tx=tx) == fires("expired")
    expired_at = parse_iso(got["timestamps"]["expired"]).timestamp()
    assert abs(expired_at - due) < 1  # expired at the deadline, not when the clock stopped


async def test_a_decided_payment_does_not_expire_later(
    api: Api, keys: Keys, events: Events
) -> None:
    tx = await to_state(api, keys, "completed")
    await api.advance(73 * 3600)
    assert await status_of(api, tx, keys.sandbox_sk) == "completed"
    assert events.types(tx=tx) == fires("paid")


# -- production: simulated providers ------------------------------------------------------------


async def test_production_callback_completes_after_its_delay(
    api: Api, keys: Keys, events: Events
) -> None:
    tx = (await api.pay(key=keys.live_sk))["transactionId"]  # SPEI via STP: callback after 30 s
    await api.advance(29)
    assert await status_of(api, tx, keys.live_sk) == "pending"
    await api.advance(2)
    assert await status_of(api, tx, keys.live_sk) == "completed"
    assert events.types(tx=tx) == fires("paid", simulator=False)  # no payment.captured
    assert events.seen[0]["environment"] == "production"


async def test_production_boleto_is_confirmed_by_the_poll(
    api: Api, keys: Keys, events: Events
) -> None:
    await align_to_poll(api, keys, after=1)
    created = await api.pay(
        key=keys.live_sk,
        paymentMethodId="1007",
        amount=20,
        userName="Maria Silva",
        documentId=CPF,
    )
    tx = created["transactionId"]
    assert created["paymentData"]["method"] == "boleto"
    await api.advance(60)
    assert await status_of(api, tx, keys.live_sk) == "pending"
    await api.advance(POLL - 70)
    assert await status_of(api, tx, keys.live_sk) == "pending"
    await api.advance(11)
    assert await status_of(api, tx, keys.live_sk) == "completed"
    assert events.types(tx=tx) == fires("paid", simulator=False)


async def test_production_rapipago_calls_back_failed(api: Api, keys: Keys, events: Events) -> None:
    created = await api.pay(
        key=keys.live_sk, paymentMethodId="1015", amount=20, documentId="30123456"
    )
    tx = created["transactionId"]
    await api.advance(10)
    assert await status_of(api, tx, keys.live_sk) == "pending"
    await api.advance(25)
    status, got, _ = await api.get(f"/payments/{tx}", keys.live_sk)
    assert got["status"] == "failed" and "failed" in got["timestamps"]
    assert events.types(tx=tx) == fires("failed", simulator=False)
    status, body, _ = await api.get("/me/balance", keys.live_sk)
    assert status == 200 and body["movements"] == []


async def test_a_chargeback_shows_on_the_payment(api: Api, keys: Keys) -> None:
    tx = await api.pay()
    tx_id = tx["transactionId"]
    await api.post(f"/payments/{tx_id}/simulate", keys.sandbox_sk, json={"action": "paid"})
    status, before, _ = await api.get(f"/payments/{tx_id}", keys.sandbox_sk)
    assert before["chargebackClaimId"] is None
    await api.post(f"/payments/{tx_id}/simulate", keys.sandbox_sk, json={"action": "chargeback"})
    status, after, _ = await api.get(f"/payments/{tx_id}", keys.sandbox_sk)
    assert status == 200 and after["status"] == "completed"
    assert after["chargebackClaimId"].startswith("CLM-")
    status, claim = await get_claim(api, after["chargebackClaimId"], keys.sandbox_sk)
    assert status == 200 and claim["kind"] == "chargeback"
