"""GET /_sim/coverage through the public surface: transitions, events and errors are counted as
they happen, the rows never reached stay at 0, and a reset starts the count again."""

from __future__ import annotations

from typing import Any

from payorch.vocabulary import EVENT_TYPES
from tests.conftest import Api, Keys


async def coverage(api: Api, key: str) -> dict[str, Any]:
    status, body, _ = await api.get("/_sim/coverage", key)
    assert status == 200, body
    return body


def rows(body: dict[str, Any]) -> dict[str, int]:
    return {row["key"]: row["reached"] for t in body["stateTables"] for row in t["rows"]}


def events(body: dict[str, Any]) -> dict[str, int]:
    return {e["type"]: e["reached"] for e in body["events"]}


def errors(body: dict[str, Any]) -> dict[tuple[str, int], int]:
    return {(e["code"], e["status"]): e["reached"] for e in body["errors"]}


async def test_a_fresh_server_has_reached_nothing(api: Api, keys: Keys) -> None:
    body = await coverage(api, keys.sandbox_sk)
    assert set(rows(body).values()) == {0}
    assert set(events(body).values()) == {0}
    assert body["totals"]["stateRows"]["reached"] == 0
    assert body["totals"]["stateRows"]["total"] == len(rows(body))
    tables = [t["table"] for t in body["stateTables"]]
    assert tables == [
        "transaction",
        "simulate",
        "checkout_session",
        "payout",
        "deposit_account",
        "refund_claim",
    ]


async def test_transitions_events_and_errors_are_counted(api: Api, keys: Keys) -> None:
    sk = keys.sandbox_sk
    status, tx, _ = await api.post("/payments", sk, json={"amount": 10, "paymentMethodId": "1001"})
    assert status == 200, tx
    tx_id = tx["transactionId"]
    status, _, _ = await api.post(f"/payments/{tx_id}/simulate", sk, json={"action": "paid"})
    assert status == 200
    status, _, _ = await api.post(f"/payments/{tx_id}/simulate", sk, json={"action": "paid"})
    assert status == 400
    status, _, _ = await api.get("/payments/TXN-NOPE", sk)
    assert status == 404

    body = await coverage(api, sk)
    reached = rows(body)
    assert reached["transaction.create"] == 1
    assert reached["simulate.paid"] == 1
    assert reached["simulate.failed"] == 0
    assert events(body)["payment.completed"] == 1
    assert events(body)["payment.captured"] == 1
    assert events(body)["payment.refunded"] == 0
    assert errors(body)[("invalid_request", 400)] == 1
    assert errors(body)[("transaction_not_found", 404)] == 1
    # Out of the vocabulary's event types, however many there are.
    total = len(EVENT_TYPES)
    assert body["totals"]["events"] == {
        "reached": 2,
        "total": total,
        "percent": round(100 * 2 / total, 1),
    }


async def test_a_reset_starts_the_count_again(api: Api, keys: Keys) -> None:
    sk = keys.sandbox_sk
    await api.post("/payments", sk, json={"amount": 10, "paymentMethodId": "1001"})
    before = await coverage(api, sk)
    assert rows(before)["transaction.create"] == 1
    status, _, _ = await api.post("/_sim/reset", sk)
    assert status == 200
    after = await coverage(api, sk)
    assert rows(after)["transaction.create"] == 0
    assert after["since"] >= before["since"]


async def test_production_keys_are_refused(api: Api, keys: Keys) -> None:
    status, body, _ = await api.get("/_sim/coverage", keys.live_sk)
    assert status == 400, body
    assert body["error"]["code"] == "production_key_refused"
