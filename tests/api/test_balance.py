"""GET /me/balance: the balance derived from the ledger's movements (ledger.py, account.py).

Decisions: a completed payment's net amount is pending until the tier's settlement delay (T+N days)
passes, then available, less the rolling reserve, which is released reserveDays later; open claims
(refunds, chargebacks) hold money in frozen; a chargeback resolves after 7 days as merchant_lost
and charges the tier's chargeback fee.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from simulator.clock import parse_iso
from tests.conftest import Api, Keys, assert_error

DAY = 86_400
BUCKETS = ("available", "pending", "frozen", "reserve")


def d(value: Any) -> Decimal:
    return Decimal(str(value))


async def balance(api: Api, key: str) -> dict[str, Any]:
    status, body, _ = await api.get("/me/balance", key)
    assert status == 200, body
    check_invariants(body)
    return body


def check_invariants(body: dict[str, Any]) -> None:
    """Never negative; the buckets add up to the sum of every movement listed."""
    buckets = body["balance"]
    for name in BUCKETS:
        assert d(buckets[name]) >= 0, body
    assert len(body["movements"]) < 100  # the list is capped: keep these scenarios small
    total = sum((d(m["amount"]) for m in body["movements"]), Decimal(0))
    assert sum(d(buckets[name]) for name in BUCKETS) == total, body


def summary(body: dict[str, Any]) -> dict[str, Decimal]:
    return {name: d(body["balance"][name]) for name in BUCKETS}


async def completed(api: Api, key: str, **body: Any) -> dict[str, Any]:
    tx = await api.pay(key=key, **body)
    status, out, _ = await api.post(
        f"/payments/{tx['transactionId']}/simulate", key, json={"action": "paid"}
    )
    assert status == 200 and out["status"] == "completed", out
    return tx


async def simulate(api: Api, tx_id: str, action: str, key: str) -> None:
    status, out, _ = await api.post(f"/payments/{tx_id}/simulate", key, json={"action": action})
    assert status == 200, out


async def test_shape_and_terms_of_an_empty_balance(api: Api, keys: Keys) -> None:
    body = await balance(api, keys.sandbox_sk)
    assert body["merchantId"] == "mer_mercadoazul" and body["currency"] == "USD"
    assert body["balance"] == {"available": 0, "pending": 0, "frozen": 0, "reserve": 0}
    assert body["tier"] == "standard" and body["trustScore"] == 720
    assert body["rollingReservePct"] == 5 and body["withdrawalFeeUsd"] == 10
    assert body["feeSummary"] == {
        "grossVolume": 0,
        "platformFees": 0,
        "flatFees": 0,
        "chargebackFees": 0,
        "totalFees": 0,
        "netBalance": 0,
    }
    assert body["ledgerWarnings"] == [] and body["movements"] == []
    assert body["reserveSchedule"] == []


async def test_balance_needs_a_secret_key(api: Api, keys: Keys) -> None:
    status, body, _ = await api.get("/me/balance", keys.sandbox_pk)
    assert_error(status, body, 403, "key_kind_not_allowed")
    status, body, _ = await api.get("/me/balance")
    assert_error(status, body, 401, "missing_credentials")


async def test_pending_then_available_after_the_settlement_delay(api: Api, keys: Keys) -> None:
    tx = await api.pay(amount=100)
    assert summary(await balance(api, keys.sandbox_sk)) == dict.fromkeys(BUCKETS, Decimal(0))
    await simulate(api, tx["transactionId"], "paid", keys.sandbox_sk)
    # 100 USD - 3.50 platform (3.5 %) - 1.80 SPEI (1.5 % + 0.30) = 94.70 net, all on its way.
    body = await balance(api, keys.sandbox_sk)
    assert summary(body) == {
        "available": 0,
        "pending": Decimal("94.7"),
        "frozen": 0,
        "reserve": 0,
    }
    status, got, _ = await api.get(f"/payments/{tx['transactionId']}", keys.sandbox_sk)
    assert got["settlement"] == {"type": "delayed", "delay": "T+2", "status": "pending"}

    await api.advance(2 * DAY - 60)  # standard tier: T+2
    assert d((await balance(api, keys.sandbox_sk))["balance"]["pending"]) == Decimal("94.7")
    await api.advance(120)
    body = await balance(api, keys.sandbox_sk)
    assert summary(body) == {
        "available": Decimal("89.7"),
        "pending": 0,
        "frozen": 0,
        "reserve": Decimal("5"),  # 5 % rolling reserve of 100 USD
    }
    status, got, _ = await api.get(f"/payments/{tx['transactionId']}", keys.sandbox_sk)
    assert status == 200 and got["settlement"]["status"] == "settled"


@pytest.mark.parametrize(
    ("key_name", "delay_days", "reserve_pct", "reserve_days"),
    [("sandbox_sk", 2, "5", 60), ("other_sk", 1, "2.5", 30), ("starter_sk", 3, "10", 90)],
)
async def test_settlement_delay_and_reserve_per_tier(
    api: Api, keys: Keys, key_name: str, delay_days: int, reserve_pct: str, reserve_days: int
) -> None:
    key = getattr(keys, key_name)
    body = {"paymentMethodId": "sbx_card", "amount": 200}
    tx = await completed(api, key, **body)
    fees = {k: d(v) for k, v in tx["fees"].items()}
    reserve = d(tx["settlement"]["reserve"])
    assert reserve == Decimal(200) * d(reserve_pct) / 100
    net = Decimal(200) - fees["total"]
    first = await balance(api, key)
    assert d(first["rollingReservePct"]) == d(reserve_pct)
    assert summary(first)["pending"] == net and summary(first)["available"] == 0
    (scheduled,) = first["reserveSchedule"]
    assert d(scheduled["amount"]) == reserve

    await api.advance(delay_days * DAY - 60)
    assert summary(await balance(api, key))["available"] == 0
    await api.advance(120)
    settled = await balance(api, key)
    assert summary(settled) == {
        "available": net - reserve,
        "pending": 0,
        "frozen": 0,
        "reserve": reserve,
    }
    release_at = parse_iso(scheduled["releaseAt"]).timestamp()
    completed_at = parse_iso(settled["movements"][-1]["createdAt"]).timestamp()
    assert abs(release_at - completed_at - (delay_days + reserve_days) * DAY) < 1

    await api.advance(reserve_days * DAY - 120)
    assert summary(await balance(api, key))["reserve"] == reserve
    await api.advance(120)
    released = await balance(api, key)
    assert summary(released) == {"available": net, "pending": 0, "frozen": 0, "reserve": 0}
    assert released["reserveSchedule"] == []


async def test_fee_summary_matches_the_transactions(api: Api, keys: Keys) -> None:
    txs = [
        await completed(api, keys.sandbox_sk, amount=100),
        await completed(api, keys.sandbox_sk, paymentMethodId="sbx_card", amount=37.5),
        await completed(
            api, keys.sandbox_sk, paymentMethodId="1002", amount=20, userEmail="a@b.co"
        ),
    ]
    await api.pay(amount=70)  # pending: no fees yet
    failed = await api.pay(amount=80)
    await simulate(api, failed["transactionId"], "failed", keys.sandbox_sk)
    body = await balance(api, keys.sandbox_sk)
    fees = body["feeSummary"]
    platform = sum((d(t["fees"]["platform"]) for t in txs), Decimal(0))
    processing = sum((d(t["fees"]["provider"]) + d(t["fees"]["network"]) for t in txs), Decimal(0))
    assert d(fees["grossVolume"]) == Decimal("157.5")
    assert d(fees["platformFees"]) == platform
    assert d(fees["flatFees"]) == processing
    assert d(fees["chargebackFees"]) == 0
    assert d(fees["totalFees"]) == sum((d(t["fees"]["total"]) for t in txs), Decimal(0))
    assert d(fees["netBalance"]) == Decimal("157.5") - d(fees["totalFees"])
    assert d(tx_fee := txs[1]["fees"]["network"]) == Decimal("0.10"), tx_fee  # card network fee


async def test_movements_are_listed(api: Api, keys: Keys) -> None:
    tx = await completed(api, keys.sandbox_sk, amount=100)
    body = await balance(api, keys.sandbox_sk)
    moves = body["movements"]
    assert {m["transactionId"] for m in moves} == {tx["transactionId"]}
    for move in moves:
        assert move["id"].startswith("mv_")
        assert move["bucket"] in ("available", "reserve", "frozen")
        parse_iso(move["createdAt"])
        parse_iso(move["effectiveAt"])
    by_type: dict[str, Decimal] = {}
    for move in moves:
        if move["bucket"] == "available":
            by_type[move["type"]] = by_type.get(move["type"], Decimal(0)) + d(move["amount"])
    assert by_type["payment"] == 100
    assert by_type["fee_platform"] == Decimal("-3.5")
    assert by_type["fee_processing"] == Decimal("-1.8")
    assert by_type["reserve_hold"] == Decimal("-5")
    assert by_type["reserve_release"] == Decimal("5")
    # Another merchant sees none of it, and neither does production.
    assert (await balance(api, keys.other_sk))["movements"] == []
    assert (await balance(api, keys.live_sk))["movements"] == []


async def test_frozen_while_a_refund_claim_is_open(api: Api, keys: Keys) -> None:
    txs = [await completed(api, keys.sandbox_sk, amount=100) for _ in range(2)]
    await api.advance(3 * DAY)
    before = summary(await balance(api, keys.sandbox_sk))
    assert before["available"] == Decimal("179.4")
    status, claim, _ = await api.post(
        f"/payments/{txs[0]['transactionId']}/refund", keys.sandbox_sk, json={"amount": 855}
    )
    assert status == 200 and claim["amountUsd"] == 50, claim
    during = summary(await balance(api, keys.sandbox_sk))
    assert during["available"] == Decimal("129.4") and during["frozen"] == 50
    assert during["reserve"] == before["reserve"]
    await api.advance(3601)
    after = await balance(api, keys.sandbox_sk)
    assert summary(after)["frozen"] == 0 and summary(after)["available"] == Decimal("129.4")
    assert d(after["feeSummary"]["netBalance"]) == sum(summary(after).values())


async def test_chargeback_freezes_then_is_lost_with_a_fee(api: Api, keys: Keys) -> None:
    txs = [await completed(api, keys.sandbox_sk, amount=100) for _ in range(2)]
    await api.advance(3 * DAY)
    await simulate(api, txs[0]["transactionId"], "chargeback", keys.sandbox_sk)
    during = summary(await balance(api, keys.sandbox_sk))
    assert during == {
        "available": Decimal("79.4"),  # 179.40 - 100 held
        "pending": 0,
        "frozen": Decimal("100"),
        "reserve": Decimal("10"),
    }
    await api.advance(7 * DAY - 120)
    assert summary(await balance(api, keys.sandbox_sk))["frozen"] == 100
    await api.advance(240)
    after = await balance(api, keys.sandbox_sk)
    assert summary(after) == {
        "available": Decimal("54.4"),  # 79.40 - 25.00 chargeback fee
        "pending": 0,
        "frozen": 0,
        "reserve": Decimal("10"),
    }
    assert d(after["feeSummary"]["chargebackFees"]) == 25
    assert d(after["feeSummary"]["totalFees"]) == Decimal("10.6") + 25
    assert d(after["feeSummary"]["netBalance"]) == sum(summary(after).values())
    assert after["ledgerWarnings"] == []


async def test_chargeback_on_money_still_pending(api: Api, keys: Keys) -> None:
    """Chargeback before settlement: the payment's own pending money is frozen, and the merchant
    does not keep it when the dispute is lost."""
    tx = await completed(api, keys.sandbox_sk, amount=100)
    await simulate(api, tx["transactionId"], "chargeback", keys.sandbox_sk)
    during = summary(await balance(api, keys.sandbox_sk))
    assert during["frozen"] == Decimal("89.7")  # what the payment brings to available
    assert during["pending"] == Decimal("5")  # its reserve, still on its way
    assert during["available"] == 0
    await api.advance(7 * DAY + 60)
    after = await balance(api, keys.sandbox_sk)
    assert summary(after) == {"available": 0, "pending": 0, "frozen": 0, "reserve": Decimal("5")}
    # Neither the 10.30 still owed on the dispute nor the 25.00 fee could be taken: both shown.
    assert {w["type"] for w in after["ledgerWarnings"]} == {"uncovered_chargeback"}
    await api.advance(60 * DAY)  # the reserve is released; the balance stays consistent
    final = await balance(api, keys.sandbox_sk)
    assert summary(final) == {"available": Decimal("5"), "pending": 0, "frozen": 0, "reserve": 0}


async def test_provider_refund_of_money_still_pending(api: Api, keys: Keys) -> None:
    """simulate `refunded` right after `paid`: the refund is taken from the payment's own pending
    settlement, so the merchant never receives money the buyer got back."""
    tx = await completed(api, keys.sandbox_sk, amount=100)
    await simulate(api, tx["transactionId"], "refunded", keys.sandbox_sk)
    body = await balance(api, keys.sandbox_sk)
    assert summary(body) == {"available": 0, "pending": Decimal("5"), "frozen": 0, "reserve": 0}
    assert {w["type"] for w in body["ledgerWarnings"]} == {"uncovered_refund"}
    await api.advance(3 * DAY)
    settled = summary(await balance(api, keys.sandbox_sk))
    assert settled == {"available": 0, "pending": 0, "frozen": 0, "reserve": Decimal("5")}


async def test_provider_refund_of_available_money(api: Api, keys: Keys) -> None:
    txs = [await completed(api, keys.sandbox_sk, amount=100) for _ in range(2)]
    await api.advance(3 * DAY)
    await simulate(api, txs[0]["transactionId"], "refunded", keys.sandbox_sk)
    body = await balance(api, keys.sandbox_sk)
    assert summary(body) == {
        "available": Decimal("79.4"),
        "pending": 0,
        "frozen": 0,
        "reserve": Decimal("10"),
    }
    assert body["ledgerWarnings"] == []
    assert d(body["feeSummary"]["netBalance"]) == sum(summary(body).values())


async def test_balance_never_negative_in_a_busy_scenario(api: Api, keys: Keys) -> None:
    """Refunds, provider refunds and chargebacks on pending and available money, mixed."""
    a = await completed(api, keys.sandbox_sk, amount=100)
    b = await completed(api, keys.sandbox_sk, amount=40)
    await simulate(api, a["transactionId"], "chargeback", keys.sandbox_sk)
    await balance(api, keys.sandbox_sk)
    await api.advance(2 * DAY + 10)
    status, body, _ = await api.post(f"/payments/{b['transactionId']}/refund", keys.sandbox_sk)
    assert_error(status, body, 422, "balance_insufficient")  # b's 35.88 is all there is
    status, body, _ = await api.post(
        f"/payments/{b['transactionId']}/refund", keys.sandbox_sk, json={"amount": 300}
    )
    assert status == 200, body
    c = await completed(api, keys.sandbox_sk, amount=60)
    await simulate(api, c["transactionId"], "refunded", keys.sandbox_sk)
    await balance(api, keys.sandbox_sk)
    for step in (3600, DAY, 7 * DAY, 90 * DAY):
        await api.advance(step)
        await balance(api, keys.sandbox_sk)
