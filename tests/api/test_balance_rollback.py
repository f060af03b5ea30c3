"""The balance follows a failed store batch: movements recorded by a request or a scheduled job
that then fails vanish from every total, as a ledger rebuilt from the store reads them."""

from __future__ import annotations

from typing import Any

import pytest

from simulator.domain.ledger import Ledger
from simulator.http.keys import BUS, CLOCK, CONTEXT, STORE
from tests.api.test_balance import DAY, balance, completed
from tests.conftest import Api, Keys, assert_error

SCOPE = ("mer_mercadoazul", "sandbox")


def fail_on(api: Api, monkeypatch: pytest.MonkeyPatch, event_type: str) -> None:
    """Make emitting `event_type` raise: after the ledger recorded the request's movements."""
    bus = api.client.server.app[BUS]
    emit = bus.emit

    def failing(merchant_id: str, environment: str, kind: str, data: Any) -> Any:
        if kind == event_type:
            raise RuntimeError("the bus is down")
        return emit(merchant_id, environment, kind, data)

    monkeypatch.setattr(bus, "emit", failing)


def assert_matches_a_rebuilt_ledger(api: Api) -> None:
    app = api.client.server.app
    live = app[CONTEXT].ledger
    rebuilt = Ledger(app[STORE].table("movements"))
    now = app[CLOCK].timestamp()
    assert live.balance(SCOPE, now) == rebuilt.balance(SCOPE, now)
    assert live.available(SCOPE, now) == rebuilt.available(SCOPE, now)
    assert live.latest(SCOPE) == rebuilt.latest(SCOPE)
    assert live.warnings(SCOPE) == rebuilt.warnings(SCOPE)


async def test_a_refund_that_fails_after_recording_leaves_the_balance_as_it_was(
    api: Api, keys: Keys, monkeypatch: pytest.MonkeyPatch
) -> None:
    tx = await completed(api, keys.sandbox_sk)
    await completed(api, keys.sandbox_sk)  # the net of two payments covers one's refund
    await api.advance(3 * DAY)  # settled: the refund is drawn on `available`
    before = await balance(api, keys.sandbox_sk)
    assert before["balance"]["available"] > 0
    fail_on(api, monkeypatch, "payment.refunded")
    status, body, _ = await api.post(f"/payments/{tx['transactionId']}/refund", keys.sandbox_sk)
    assert_error(status, body, 500, "internal_error")
    assert await balance(api, keys.sandbox_sk) == before
    assert_matches_a_rebuilt_ledger(api)
    monkeypatch.undo()
    status, body, _ = await api.post(f"/payments/{tx['transactionId']}/refund", keys.sandbox_sk)
    assert status == 200, body
    after = await balance(api, keys.sandbox_sk)
    assert after["balance"]["frozen"] == 50  # held for the refund's claim
    assert_matches_a_rebuilt_ledger(api)


async def test_a_settlement_job_that_fails_after_recording_leaves_no_movement(
    api: Api, keys: Keys, monkeypatch: pytest.MonkeyPatch
) -> None:
    status, tx, _ = await api.post(
        "/payments",
        keys.sandbox_sk,
        json={"amount": 50, "paymentMethodId": "1001"},
        headers={"Sandbox-Simulate": "paid"},
    )
    assert status == 200, tx
    empty = await balance(api, keys.sandbox_sk)
    # The job completing the payment records its seven movements, then fails on its event:
    # the scheduler rolls its batch back (and drops the job).
    fail_on(api, monkeypatch, "payment.completed")
    await api.advance(60)
    assert await balance(api, keys.sandbox_sk) == empty
    assert api.client.server.app[CONTEXT].ledger.movements(SCOPE) == []
    assert_matches_a_rebuilt_ledger(api)
    monkeypatch.undo()
    await completed_later(api, keys, tx["transactionId"])
    await api.advance(3 * DAY)
    settled = await balance(api, keys.sandbox_sk)
    assert settled["balance"]["available"] > 0 and settled["feeSummary"]["grossVolume"] == 50
    assert_matches_a_rebuilt_ledger(api)


async def completed_later(api: Api, keys: Keys, tx_id: str) -> None:
    status, out, _ = await api.post(
        f"/payments/{tx_id}/simulate", keys.sandbox_sk, json={"action": "paid"}
    )
    assert status == 200 and out["status"] == "completed", out
