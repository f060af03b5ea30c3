"""POST /payments/{id}/refund and GET /claims/{id} through the HTTP API.

A refund is a claim (`CLM-...`) that holds its USD value in `frozen` at once and resolves one
simulated hour later (payins/refunds.py). Refunds come out of the *available* balance, so most tests
first let the tier's settlement delay pass (mer_mercadoazul: T+2, 5 % rolling reserve, 3.5 %
platform fee).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from simulator.clock import parse_iso
from simulator.http.keys import BUS
from tests.conftest import Api, Keys, assert_error, get_claim

DAY = 86_400
SETTLED = 2 * DAY + 60  # past mer_mercadoazul's T+2 settlement delay


LIFECYCLE_EVENTS = ("payment.", "chargeback.", "claim.")


class Events:
    """Pay-in lifecycle events from the moment the probe is attached (settlement events, which
    follow the UTC calendar, are left out)."""

    def __init__(self, client: TestClient) -> None:
        self.seen: list[dict[str, Any]] = []
        client.server.app[BUS].subscribe(self._record)

    def _record(self, event: dict[str, Any]) -> None:
        if event["type"].startswith(LIFECYCLE_EVENTS):
            self.seen.append(event)

    def types(self) -> list[str]:
        return [e["type"] for e in self.seen]


@pytest.fixture
def events(client: TestClient) -> Events:
    return Events(client)


async def completed(api: Api, keys: Keys, key: str | None = None, **body: Any) -> dict[str, Any]:
    key = key or keys.sandbox_sk
    tx = await api.pay(key=key, **body)
    status, out, _ = await api.post(
        f"/payments/{tx['transactionId']}/simulate", key, json={"action": "paid"}
    )
    assert status == 200 and out["status"] == "completed", out
    return tx


async def funded(api: Api, keys: Keys, count: int = 3, **body: Any) -> list[dict[str, Any]]:
    """`count` completed payments whose money is available (settlement delay passed)."""
    txs = [await completed(api, keys, **body) for _ in range(count)]
    await api.advance(SETTLED)
    return txs


async def refund(api: Api, tx_id: str, key: str, body: Any = None) -> tuple[int, Any]:
    status, out, _ = await api.post(f"/payments/{tx_id}/refund", key, json=body)
    return status, out


async def balance(api: Api, key: str) -> dict[str, Any]:
    status, body, _ = await api.get("/me/balance", key)
    assert status == 200, body
    return body


async def clock_now(api: Api, keys: Keys) -> float:
    status, body, _ = await api.get("/_sim/clock", keys.sandbox_sk)
    assert status == 200
    return parse_iso(body["now"]).timestamp()


def d(value: Any) -> Decimal:
    return Decimal(str(value))


# -- the refund resource -----------------------------------------------------------------------


async def test_full_refund_defaults_to_the_local_amount(
    api: Api, keys: Keys, events: Events
) -> None:
    tx, *_ = await funded(api, keys)
    tx_id = tx["transactionId"]
    now = await clock_now(api, keys)
    events.seen.clear()
    status, body = await refund(api, tx_id, keys.sandbox_sk, {"reason": "requested_by_customer"})
    assert status == 200, body
    assert set(body) == {
        "refundId",
        "transactionId",
        "amount",
        "amountUsd",
        "currency",
        "status",
        "reason",
        "createdAt",
    }
    assert body["refundId"].startswith("CLM-")
    assert body["transactionId"] == tx_id
    assert body["amount"] == tx["amountLocal"] == 855  # 50 USD at 17.10 MXN
    assert body["currency"] == tx["currencyLocal"] == "MXN"
    assert body["amountUsd"] == tx["amount"] == 50
    assert body["status"] == "pending"
    assert body["reason"] == "requested_by_customer"
    assert abs(parse_iso(body["createdAt"]).timestamp() - now) < 5
    assert events.types() == ["claim.opened", "payment.refunded"]
    assert events.seen[0]["data"]["id"] == body["refundId"]
    assert events.seen[1]["data"]["id"] == tx_id
    assert events.seen[1]["data"]["status"] == "refunded"

    status, got, _ = await api.get(f"/payments/{tx_id}", keys.sandbox_sk)
    assert got["status"] == "refunded"
    assert got["refundedAmount"] == 855
    assert "refunded" in got["timestamps"]
    status, page, _ = await api.get("/payments?status=refunded", keys.sandbox_sk)
    assert [row["id"] for row in page["data"]] == [tx_id]


async def test_refund_without_a_body_is_a_full_refund(api: Api, keys: Keys) -> None:
    tx, *_ = await funded(api, keys)
    status, body = await refund(api, tx["transactionId"], keys.sandbox_sk)
    assert status == 200, body
    assert body["amount"] == 855 and body["reason"] is None


async def test_partial_refunds_sum_to_the_whole(api: Api, keys: Keys, events: Events) -> None:
    tx, *_ = await funded(api, keys)
    tx_id = tx["transactionId"]
    events.seen.clear()
    usd: list[Decimal] = []
    for part, expected_status in ((300, "completed"), (254.5, "completed"), (300.5, "refunded")):
        status, body = await refund(api, tx_id, keys.sandbox_sk, {"amount": part})
        assert status == 200, body
        assert d(body["amount"]) == d(part) and body["currency"] == "MXN"
        usd.append(d(body["amountUsd"]))
        status, got, _ = await api.get(f"/payments/{tx_id}", keys.sandbox_sk)
        assert got["status"] == expected_status
    assert got["refundedAmount"] == 855
    assert usd[0] == Decimal("17.54")  # 300 / 855 * 50, rounded to the cent
    assert sum(usd) == Decimal("50")  # no rounding dust left behind
    assert events.types() == ["claim.opened", "payment.refunded"] * 3


async def test_many_small_refunds_never_exceed_the_payment(api: Api, keys: Keys) -> None:
    """Rounding each refund up on its own must not add up to more USD than the payment brought."""
    tx, *_ = await funded(api, keys, amount=1)  # 1 USD = 17.10 MXN
    tx_id = tx["transactionId"]
    total = Decimal(0)
    # 0.43 MXN is 0.0251 USD: 0.03 if rounded alone, so 34 of them would already pass 1 USD.
    for part in [0.43] * 39 + [0.33]:  # 39 x 0.43 + 0.33 = 17.10 MXN
        status, body = await refund(api, tx_id, keys.sandbox_sk, {"amount": part})
        assert status == 200, body
        assert d(body["amountUsd"]) >= 0
        total += d(body["amountUsd"])
        assert total <= 1
    assert total == 1
    status, got, _ = await api.get(f"/payments/{tx_id}", keys.sandbox_sk)
    assert got["status"] == "refunded" and got["refundedAmount"] == got["amountLocal"]


async def test_refund_over_the_remaining_amount(api: Api, keys: Keys) -> None:
    tx, *_ = await funded(api, keys)
    tx_id = tx["transactionId"]
    status, body = await refund(api, tx_id, keys.sandbox_sk, {"amount": 855.01})
    error = assert_error(status, body, 422, "balance_insufficient")
    assert error["param"] == "amount"
    status, body = await refund(api, tx_id, keys.sandbox_sk, {"amount": 500})
    assert status == 200, body
    status, body = await refund(api, tx_id, keys.sandbox_sk, {"amount": 356})
    error = assert_error(status, body, 422, "balance_insufficient")
    assert error["details"]["remainingAmount"] == 355
    status, body = await refund(api, tx_id, keys.sandbox_sk, {"amount": 355})
    assert status == 200, body
    # Fully refunded: nothing remains, whatever is asked.
    status, body = await refund(api, tx_id, keys.sandbox_sk)
    assert_error(status, body, 422, "balance_insufficient")
    status, body = await refund(api, tx_id, keys.sandbox_sk, {"amount": 1})
    assert_error(status, body, 422, "balance_insufficient")


async def test_refund_exceeding_the_available_balance(api: Api, keys: Keys, events: Events) -> None:
    tx = await completed(api, keys)  # money still pending (T+2)
    events.seen.clear()
    status, body = await refund(api, tx["transactionId"], keys.sandbox_sk)
    error = assert_error(status, body, 422, "balance_insufficient")
    assert error["details"]["availableUsd"] == 0
    assert error["details"]["shortfallUsd"] == 50
    assert events.types() == []
    status, got, _ = await api.get(f"/payments/{tx['transactionId']}", keys.sandbox_sk)
    assert got["status"] == "completed" and got["refundedAmount"] == 0

    # Once settled, this payment alone leaves 50 - 1.75 - 1.05 fees - 2.50 reserve = 44.70.
    await api.advance(SETTLED)
    status, body = await refund(api, tx["transactionId"], keys.sandbox_sk)
    error = assert_error(status, body, 422, "balance_insufficient")
    assert error["details"]["availableUsd"] == 44.7
    assert error["details"]["shortfallUsd"] == 5.3
    status, body = await refund(api, tx["transactionId"], keys.sandbox_sk, {"amount": 764.37})
    assert status == 200, body  # 764.37 MXN = 44.70 USD: exactly what is available
    assert body["amountUsd"] == 44.7
    assert (await balance(api, keys.sandbox_sk))["balance"]["available"] == 0


@pytest.mark.parametrize("state", ["pending", "failed", "expired"])
async def test_refund_of_an_undecided_or_failed_payment(
    api: Api, keys: Keys, events: Events, state: str
) -> None:
    await funded(api, keys)
    tx = (await api.pay())["transactionId"]
    if state != "pending":
        status, body, _ = await api.post(
            f"/payments/{tx}/simulate", keys.sandbox_sk, json={"action": state}
        )
        assert status == 200, body
    events.seen.clear()
    status, body = await refund(api, tx, keys.sandbox_sk)
    error = assert_error(status, body, 400, "invalid_request")
    assert error["details"]["status"] == state
    assert events.types() == []
    status, got, _ = await api.get(f"/payments/{tx}", keys.sandbox_sk)
    assert got["status"] == state


async def test_refund_unknown_or_foreign_payment(api: Api, keys: Keys) -> None:
    status, body = await refund(api, "TXN-NOPE", keys.sandbox_sk)
    assert_error(status, body, 404, "transaction_not_found")
    foreign = await completed(api, keys, key=keys.other_sk)
    status, body = await refund(api, foreign["transactionId"], keys.sandbox_sk)
    assert_error(status, body, 404, "transaction_not_found")
    status, body = await refund(api, foreign["transactionId"], keys.sandbox_pk)
    assert_error(status, body, 403, "key_kind_not_allowed")
    status, body = await refund(api, foreign["transactionId"], None)
    assert_error(status, body, 401, "missing_credentials")


async def test_reason_length(api: Api, keys: Keys) -> None:
    tx, *_ = await funded(api, keys)
    tx_id = tx["transactionId"]
    status, body = await refund(api, tx_id, keys.sandbox_sk, {"reason": "x" * 501, "amount": 1})
    error = assert_error(status, body, 400, "invalid_request")
    assert error["param"] == "reason"
    status, body = await refund(api, tx_id, keys.sandbox_sk, {"reason": 42})
    assert_error(status, body, 400, "invalid_request")
    status, body = await refund(api, tx_id, keys.sandbox_sk, {"amount": 1, "note": "x"})
    assert_error(status, body, 400, "invalid_request")
    status, got, _ = await api.get(f"/payments/{tx_id}", keys.sandbox_sk)
    assert got["refundedAmount"] == 0
    status, body = await refund(api, tx_id, keys.sandbox_sk, {"reason": "y" * 500, "amount": 1})
    assert status == 200 and body["reason"] == "y" * 500


@pytest.mark.parametrize("raw", ["10.001", "0", "-5", '"10"', "true", "1e400"])
async def test_invalid_amounts(api: Api, keys: Keys, raw: str) -> None:
    tx, *_ = await funded(api, keys)
    status, body, _ = await api.post(
        f"/payments/{tx['transactionId']}/refund",
        keys.sandbox_sk,
        data=f'{{"amount": {raw}}}',
        headers={"Content-Type": "application/json"},
    )
    assert 400 <= status < 500, body
    assert body["error"]["code"] in ("amount_invalid", "invalid_json"), body
    status, got, _ = await api.get(f"/payments/{tx['transactionId']}", keys.sandbox_sk)
    assert got["refundedAmount"] == 0


async def test_zero_decimal_currency(api: Api, keys: Keys) -> None:
    """CLP has no minor unit: a refund of 100.5 CLP is refused, 100 CLP is fine."""
    tx, *_ = await funded(api, keys, paymentMethodId="1020", amount=20)
    assert tx["currencyLocal"] == "CLP" and tx["amountLocal"] == 18700
    status, body = await refund(api, tx["transactionId"], keys.sandbox_sk, {"amount": 100.5})
    error = assert_error(status, body, 400, "amount_invalid")
    assert error["param"] == "amount"
    status, body = await refund(api, tx["transactionId"], keys.sandbox_sk, {"amount": 100})
    assert status == 200 and body["currency"] == "CLP" and body["amount"] == 100


# -- claims ------------------------------------------------------------------------------------


async def test_get_claim_shape(api: Api, keys: Keys) -> None:
    tx, *_ = await funded(api, keys)
    status, created = await refund(api, tx["transactionId"], keys.sandbox_sk, {"reason": "other"})
    assert status == 200, created
    status, claim = await get_claim(api, created["refundId"], keys.sandbox_sk)
    assert status == 200, claim
    assert claim == {
        "id": created["refundId"],
        "kind": "refund",
        "transactionId": tx["transactionId"],
        "status": "pending",
        "resolution": None,
        "amount": 855,
        "amountUsd": 50,
        "currency": "MXN",
        "reason": "other",
        "createdAt": created["createdAt"],
        "resolvedAt": None,
    }


async def test_claim_not_found(api: Api, keys: Keys) -> None:
    tx, *_ = await funded(api, keys)
    status, created = await refund(api, tx["transactionId"], keys.sandbox_sk)
    assert status == 200
    claim_id = created["refundId"]
    status, body = await get_claim(api, "CLM-UNKNOWN", keys.sandbox_sk)
    assert_error(status, body, 404, "claim_not_found")
    for other in (keys.other_sk, keys.starter_sk, keys.live_sk):  # other merchants, other env
        status, body = await get_claim(api, claim_id, other)
        assert_error(status, body, 404, "claim_not_found")
    status, body = await get_claim(api, claim_id, keys.legacy_sk)  # same merchant, no shop
    assert status == 200 and body["id"] == claim_id


async def test_claim_resolves_after_one_hour_and_releases_frozen(
    api: Api, keys: Keys, events: Events
) -> None:
    tx, *_ = await funded(api, keys)
    before = await balance(api, keys.sandbox_sk)
    assert before["balance"]["available"] == 134.1  # 3 x 44.70
    status, created = await refund(api, tx["transactionId"], keys.sandbox_sk, {"amount": 427.5})
    assert status == 200 and created["amountUsd"] == 25
    held = await balance(api, keys.sandbox_sk)
    assert held["balance"]["available"] == 109.1
    assert held["balance"]["frozen"] == 25
    events.seen.clear()

    await api.advance(3599)
    status, claim = await get_claim(api, created["refundId"], keys.sandbox_sk)
    assert claim["status"] == "pending"
    assert (await balance(api, keys.sandbox_sk))["balance"]["frozen"] == 25
    assert events.types() == []

    await api.advance(2)
    status, claim = await get_claim(api, created["refundId"], keys.sandbox_sk)
    assert claim["status"] == "resolved" and claim["resolution"] == "refunded"
    resolved_at = parse_iso(claim["resolvedAt"]).timestamp()
    assert abs(resolved_at - parse_iso(claim["createdAt"]).timestamp() - 3600) < 1
    assert events.types() == ["claim.resolved"]
    assert events.seen[0]["data"]["id"] == created["refundId"]
    after = await balance(api, keys.sandbox_sk)
    assert after["balance"]["frozen"] == 0
    assert after["balance"]["available"] == 109.1  # the money left; nothing comes back
    # The payment itself stays as it was (partially refunded, completed).
    status, got, _ = await api.get(f"/payments/{tx['transactionId']}", keys.sandbox_sk)
    assert got["status"] == "completed" and got["refundedAmount"] == 427.5


async def test_refund_of_a_charged_back_payment_is_refused(api: Api, keys: Keys) -> None:
    tx, *_ = await funded(api, keys)
    status, body, _ = await api.post(
        f"/payments/{tx['transactionId']}/simulate", keys.sandbox_sk, json={"action": "chargeback"}
    )
    assert status == 200, body
    status, body = await refund(api, tx["transactionId"], keys.sandbox_sk)
    error = assert_error(status, body, 400, "invalid_request")
    assert error["details"]["chargebackClaimId"].startswith("CLM-")


async def test_production_refund(api: Api, keys: Keys, events: Events) -> None:
    """Refunds are not sandbox-only: a live payment settled by its provider can be refunded."""
    txs = [await api.pay(key=keys.live_sk) for _ in range(2)]
    await api.advance(SETTLED)  # the STP callback (30 s) completed them; T+2 passed
    status, body = await refund(api, txs[0]["transactionId"], keys.live_sk)
    assert status == 200, body
    assert body["status"] == "pending"
    assert events.types()[-2:] == ["claim.opened", "payment.refunded"]
    assert events.seen[-1]["environment"] == "production"
    status, claim = await get_claim(api, body["refundId"], keys.live_sk)
    assert status == 200 and claim["kind"] == "refund"
    status, claim = await get_claim(api, body["refundId"], keys.sandbox_sk)
    assert_error(status, claim, 404, "claim_not_found")


async def test_the_api_caller_reaches_claims(api: Api, keys: Keys) -> None:
    status, body, _ = await api.get("/claims/CLM-UNKNOWN", keys.sandbox_sk)
    assert_error(status, body, 404, "claim_not_found")
