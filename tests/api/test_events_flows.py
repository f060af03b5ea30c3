"""The events of settlements (daily batch), withdrawals and the pay-in flows reach the webhooks
subscribed to them. (That every event type fires somewhere is the repository scenarios' test.)"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import pytest

import simulator.clock
from simulator.clock import parse_iso
from simulator.domain.webhooks import EVENT_TYPES
from tests.api.webhook_receiver import deliveries, drain, paid_payment, subscribe
from tests.conftest import Api, Keys, assert_error
from tests.wall_clock import ShiftedTime

DAY = 86_400
# What the pay-in, settlement and withdrawal flows of the catch-all inbox's test below fire.
FIRED_BY_THESE_FLOWS = {
    "payment.completed",
    "payment.captured",
    "payment.failed",
    "payment.refunded",
    "chargeback.created",
    "claim.opened",
    "claim.resolved",
    "settlement.closed",
    "settlement.pdf_ready",
    "withdrawal.completed",
    "withdrawal.failed",
}


def seconds(iso: str) -> float:
    return parse_iso(iso).timestamp()


def events_of(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d["event"] for d in reversed(rows)]  # oldest first


async def settled_balance(api: Api, keys: Keys) -> Decimal:
    """Complete a payment and let its T+2 settlement pass; the available balance."""
    await paid_payment(api)
    await api.advance(3 * DAY)
    _status, body, _ = await api.get("/me/balance", keys.sandbox_sk)
    return Decimal(str(body["balance"]["available"]))


async def test_daily_settlement_closes_then_pdf_is_ready(api: Api, keys: Keys) -> None:
    inbox = await subscribe(api, None, ["settlement.closed", "settlement.pdf_ready"])
    tx = await paid_payment(api)
    _status, payment, _ = await api.get(f"/payments/{tx['transactionId']}", keys.sandbox_sk)
    completed = seconds(payment["timestamps"]["completed"])
    close_at = (math.floor((completed + 2 * DAY) / DAY) + 1) * DAY  # T+2, then next 00:00 UTC
    now = seconds((await api.advance(0.001))["now"])
    await api.advance(close_at - now + 1)
    await drain(api.client)
    closed = events_of(await deliveries(api, inbox["id"]))
    assert [e["type"] for e in closed] == ["settlement.closed"]
    settlement = closed[0]["data"]
    assert settlement["id"].startswith("STL-") and settlement["status"] == "closed"
    assert settlement["transactionIds"] == [tx["transactionId"]]
    assert settlement["periodEnd"].endswith("T00:00:00.000Z")
    assert closed[0]["createdAt"] == settlement["periodEnd"]  # the batch runs at 00:00 UTC
    gross = Decimal(str(settlement["grossAmount"]))
    fees = Decimal(str(payment["fees"]["total"]))
    assert gross == Decimal(str(payment["amount"]))
    assert Decimal(str(settlement["netAmount"])) == gross - fees - Decimal(
        str(settlement["reserve"])
    )
    assert settlement["payout"] == {"asset": "USDT", "status": "started"}
    assert settlement["pdfReady"] is False
    await api.advance(300)
    await drain(api.client)
    events = events_of(await deliveries(api, inbox["id"]))
    assert [e["type"] for e in events] == ["settlement.closed", "settlement.pdf_ready"]
    assert events[1]["data"]["id"] == settlement["id"] and events[1]["data"]["pdfReady"] is True


async def test_a_day_without_settled_payments_closes_nothing(api: Api, keys: Keys) -> None:
    inbox = await subscribe(api, None, ["settlement.closed"])
    await api.pay()  # never completed
    await api.advance(5 * DAY)
    await drain(api.client)
    assert await deliveries(api, inbox["id"]) == []


async def test_withdrawal_completes(api: Api, keys: Keys) -> None:
    inbox = await subscribe(api, None, ["withdrawal.completed", "withdrawal.failed"])
    available = await settled_balance(api, keys)
    status, body, _ = await api.post("/_sim/withdrawals", keys.sandbox_sk, json={"amount": 20})
    assert status == 201, body
    withdrawal = body["withdrawal"]
    assert withdrawal["id"].startswith("WDR-") and withdrawal["status"] == "processing"
    assert withdrawal["fee"] == 10  # the standard tier's withdrawalFeeUsd
    status, balance, _ = await api.get("/me/balance", keys.sandbox_sk)
    assert Decimal(str(balance["balance"]["available"])) == available - 30
    await api.advance(60)
    await drain(api.client)
    [event] = events_of(await deliveries(api, inbox["id"]))
    assert event["type"] == "withdrawal.completed" and event["data"]["status"] == "completed"
    status, body, _ = await api.get(f"/_sim/withdrawals/{withdrawal['id']}", keys.sandbox_sk)
    assert body["withdrawal"]["status"] == "completed" and body["withdrawal"]["completedAt"]


async def test_failed_withdrawal_returns_the_funds(api: Api, keys: Keys) -> None:
    inbox = await subscribe(api, None, ["withdrawal.failed"])
    available = await settled_balance(api, keys)
    status, body, _ = await api.post(
        "/_sim/withdrawals", keys.sandbox_sk, json={"amount": 5, "outcome": "failed"}
    )
    assert status == 201, body
    await api.advance(60)
    await drain(api.client)
    [event] = events_of(await deliveries(api, inbox["id"]))
    assert event["type"] == "withdrawal.failed"
    assert event["data"]["failureReason"] == "rejected_by_bank"
    status, balance, _ = await api.get("/me/balance", keys.sandbox_sk)
    assert Decimal(str(balance["balance"]["available"])) == available


async def test_withdrawal_never_overdraws(api: Api, keys: Keys) -> None:
    available = await settled_balance(api, keys)
    status, body, _ = await api.post(
        "/_sim/withdrawals", keys.sandbox_sk, json={"amount": float(available - 9)}
    )
    error = assert_error(status, body, 422, "balance_insufficient")
    assert error["details"]["shortfallUsd"] == 1
    for bad, code in (
        ({}, "missing_field"),
        ({"amount": -1}, "amount_invalid"),
        ({"amount": 1.001}, "amount_invalid"),
        ({"amount": 1, "outcome": "maybe"}, "invalid_request"),
        ({"amount": 1, "to": "x"}, "invalid_request"),
    ):
        status, body, _ = await api.post("/_sim/withdrawals", keys.sandbox_sk, json=bad)
        assert_error(status, body, 400, code)
    status, body, _ = await api.get("/_sim/withdrawals/WDR-NOPE", keys.sandbox_sk)
    assert_error(status, body, 404, "withdrawal_not_found")
    status, body, _ = await api.post("/_sim/withdrawals", keys.live_sk, json={"amount": 1})
    assert_error(status, body, 400, "production_key_refused")


async def test_a_catch_all_inbox_gets_every_event_of_the_flows(api: Api, keys: Keys) -> None:
    """Drive each flow once; the inbox subscribed to `*` sees every event they fire."""
    assert set(EVENT_TYPES) >= FIRED_BY_THESE_FLOWS
    inbox = await subscribe(api, None, "*")
    refunded = await paid_payment(api)
    charged_back = await paid_payment(api)
    failed = await api.pay()
    await api.post(
        f"/payments/{failed['transactionId']}/simulate", keys.sandbox_sk, json={"action": "failed"}
    )
    await api.advance(3 * DAY)
    for path, body in (
        ("/_sim/withdrawals", {"amount": 1}),
        ("/_sim/withdrawals", {"amount": 1, "outcome": "failed"}),
        (f"/payments/{refunded['transactionId']}/refund", {}),
        (f"/payments/{charged_back['transactionId']}/simulate", {"action": "chargeback"}),
    ):
        status, answer, _ = await api.post(path, keys.sandbox_sk, json=body)
        assert status in (200, 201), answer
    await api.advance(8 * DAY)
    await drain(api.client)
    status, page, _ = await api.get(
        f"/webhooks/{inbox['id']}/deliveries?limit=100", keys.sandbox_sk
    )
    seen = {d["eventType"] for d in page["data"]}
    # What the flows above fire (payouts have their own tests): named here, not derived as "every
    # type but ...", so a new event type elsewhere breaks no test that is not about it.
    assert seen == FIRED_BY_THESE_FLOWS


class CreepingTime(ShiftedTime):
    """The `time` module as simulator/clock.py sees it, a millisecond later at every read: the
    clock of a loaded machine, where two reads in one operation never coincide."""

    def time(self) -> float:
        self.shift += 0.001
        return super().time()


async def test_the_events_of_one_transition_share_its_instant(
    api: Api, keys: Keys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`paid` fires two events, a refund and a chargeback two more each: their `createdAt` is
    one instant, the transition's, however far the clock moves while they are emitted (a
    receiver ordering by `createdAt`, as `payorch drift` does, must not see one before the
    other). Without it, the drift test of chargeback_claim.yaml failed on a loaded CI."""
    inbox = await subscribe(api, None, "*")
    monkeypatch.setattr(simulator.clock, "time", CreepingTime(0.0))
    refunded = await paid_payment(api)
    charged_back = await paid_payment(api)
    await api.advance(3 * DAY)
    for path, body in (
        (f"/payments/{refunded['transactionId']}/refund", {}),
        (f"/payments/{charged_back['transactionId']}/simulate", {"action": "chargeback"}),
    ):
        status, answer, _ = await api.post(path, keys.sandbox_sk, json=body)
        assert status in (200, 201), answer
    await drain(api.client)
    by_payment: dict[str, list[dict[str, Any]]] = {}
    for event in events_of(await deliveries(api, inbox["id"])):
        data = event["data"]  # a payment, or a claim naming its payment
        if event["type"].split(".")[0] in ("payment", "claim", "chargeback"):
            by_payment.setdefault(data.get("transactionId", data["id"]), []).append(event)
    for tx in (refunded, charged_back):
        events = by_payment[tx["transactionId"]]
        # Two transitions (paid, then the refund or chargeback), two events each: two instants.
        assert len(events) == 4, events
        assert len({event["createdAt"] for event in events}) == 2, events
