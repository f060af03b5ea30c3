"""Stateful property test of the pay-in lifecycle and the ledger, through the HTTP API.

One app per example (in-memory store, no background tick), driven synchronously: the machine owns an
event loop and runs each request to completion on it. Rules create sandbox payments (some with a
Sandbox-Simulate header), simulate every action on any payment, refund random amounts and move the
clock; after every step the invariants below must hold.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from decimal import Decimal
from typing import Any, TypeVar

from aiohttp.test_utils import TestClient, TestServer
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
)

from simulator.app import create_app
from simulator.domain.states import SIMULATE_ACTIONS
from simulator.http.keys import CONTEXT
from simulator.settings import Settings
from tests.conftest import KEYS, builtin_catalog

T = TypeVar("T")
KEY = KEYS.sandbox_sk
AUTH = {"Authorization": f"Bearer {KEY}"}
SCOPE = ("mer_mercadoazul", "sandbox")
BUCKETS = ("available", "pending", "frozen", "reserve")
DAY = 86_400

# (paymentMethodId, extra body): a few sandbox-chargeable methods in three currencies.
METHODS = [
    ("1001", {}),
    ("sbx_spei", {}),
    ("sbx_card", {}),
    ("1002", {"userEmail": "buyer@example.com"}),
    ("sbx_pix", {"documentId": "529.982.247-25"}),
]
HEADERS = [None, None, None, "paid", "failed", "expired", "chargeback", "slow_payment"]
ADVANCES = [1, 4, 60, 301, 3601, DAY, 2 * DAY + 1, 3 * DAY, 8 * DAY]


def d(value: Any) -> Decimal:
    return Decimal(str(value))


class PayinMachine(RuleBasedStateMachine):
    payments = Bundle("payments")

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        app = create_app(Settings(data_dir=None, tick_seconds=0, seed=7), catalog=builtin_catalog())
        self.context = app[CONTEXT]

        async def start() -> TestClient:
            # Built inside the loop: aiohttp binds its session to the running loop.
            client = TestClient(TestServer(app))
            await client.start_server()
            return client

        self.client = self.run(start())

    def teardown(self) -> None:
        self.run(self.client.close())
        self.loop.close()

    # -- plumbing ------------------------------------------------------------------------------

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    def call(
        self,
        method: str,
        path: str,
        json: Any = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        async def go() -> tuple[int, Any]:
            url = path if path.startswith("/_sim") else f"/api/v1{path}"
            response = await self.client.request(
                method, url, json=json, headers={**AUTH, **(headers or {})}
            )
            return response.status, await response.json()

        status, body = self.run(go())
        assert status < 500, (method, path, json, status, body)
        return status, body

    def tx(self, tx_id: str) -> dict[str, Any]:
        status, body = self.call("GET", f"/payments/{tx_id}")
        assert status == 200, body
        return body

    def charged_back(self) -> set[str]:
        status, body = self.call("GET", "/payments?status=chargeback&limit=100")
        assert status == 200, body
        return {row["id"] for row in body["data"]}

    # -- rules ---------------------------------------------------------------------------------

    @initialize()
    def fund(self) -> None:
        """A little money already available, so refunds are sometimes possible."""
        for _ in range(2):
            status, body = self.call(
                "POST", "/payments", {"amount": 200, "paymentMethodId": "1001"}
            )
            assert status == 200, body
            status, out = self.call(
                "POST", f"/payments/{body['transactionId']}/simulate", {"action": "paid"}
            )
            assert status == 200, out
        self.call("POST", "/_sim/clock/advance", {"seconds": 3 * DAY})

    @rule(
        target=payments,
        method=st.sampled_from(METHODS),
        cents=st.integers(min_value=100, max_value=50_000),  # 1 to 500 USD: within every limit
        header=st.sampled_from(HEADERS),
    )
    def create_payment(
        self, method: tuple[str, dict[str, str]], cents: int, header: str | None
    ) -> str:
        method_id, extra = method
        body = {"amount": cents / 100, "paymentMethodId": method_id, **extra}
        status, out = self.call(
            "POST", "/payments", body, {"Sandbox-Simulate": header} if header else None
        )
        assert status == 200, out
        assert out["status"] == "pending"
        return out["transactionId"]

    @rule(tx_id=payments, action=st.sampled_from(sorted(SIMULATE_ACTIONS)))
    def simulate(self, tx_id: str, action: str) -> None:
        before = self.tx(tx_id)
        disputed = tx_id in self.charged_back()
        status, out = self.call("POST", f"/payments/{tx_id}/simulate", {"action": action})
        transition = SIMULATE_ACTIONS[action]
        required, target, events = transition.requires, transition.becomes, transition.events
        legal = before["status"] == required and not (
            disputed and action in ("refunded", "chargeback")
        )
        after = self.tx(tx_id)
        if legal:
            assert status == 200, out
            assert out == {"id": tx_id, "status": target, "eventsFired": list(events)}
            assert after["status"] == target
        else:
            assert status == 400 and out["error"]["code"] == "invalid_request", out
            assert after["status"] == before["status"]
            assert after["refundedAmount"] == before["refundedAmount"]

    @rule(tx_id=payments, percent=st.one_of(st.none(), st.integers(min_value=1, max_value=120)))
    def refund(self, tx_id: str, percent: int | None) -> None:
        before = self.tx(tx_id)
        body: dict[str, Any] = {}
        if percent is not None:
            decimals = 0 if before["currencyLocal"] == "CLP" else 2
            amount = round(d(before["amountLocal"]) * percent / 100, decimals)
            if amount <= 0:
                return
            body["amount"] = float(amount)
        status, out = self.call("POST", f"/payments/{tx_id}/refund", body)
        after = self.tx(tx_id)
        remaining = d(before["amountLocal"]) - d(before["refundedAmount"])
        if status == 200:
            assert before["status"] == "completed"
            refunded = d(out["amount"])
            assert 0 < refunded <= remaining
            assert out["refundId"].startswith("CLM-") and out["status"] == "pending"
            assert d(after["refundedAmount"]) == d(before["refundedAmount"]) + refunded
            assert after["status"] == ("refunded" if refunded == remaining else "completed")
        else:
            assert status in (400, 422), out
            assert after["refundedAmount"] == before["refundedAmount"]
            assert after["status"] == before["status"]
            if before["status"] not in ("completed", "refunded"):
                assert status == 400
            elif before["status"] == "refunded":
                # Nothing left to refund: the remainder rule answers, not the state rule.
                assert out["error"]["code"] == "balance_insufficient", out
            elif status == 422:
                assert out["error"]["code"] == "balance_insufficient", out

    @rule(seconds=st.sampled_from(ADVANCES))
    def advance(self, seconds: int) -> None:
        status, out = self.call("POST", "/_sim/clock/advance", {"seconds": seconds})
        assert status == 200, out

    # -- invariants ----------------------------------------------------------------------------

    @invariant()
    def balance_is_consistent(self) -> None:
        status, body = self.call("GET", "/me/balance")
        assert status == 200, body
        buckets = {name: d(body["balance"][name]) for name in BUCKETS}
        for name, value in buckets.items():
            assert value >= 0, (name, body["balance"])
        # The listed movements are capped at 100: sum all of them through a store probe.
        movements = self.context.ledger.movements(SCOPE)
        total = sum((d(m["amount"]) for m in movements), Decimal(0))
        assert sum(buckets.values()) == total, (body["balance"], total)
        if len(movements) <= 100:
            listed = sum((d(m["amount"]) for m in body["movements"]), Decimal(0))
            assert listed == total
        # Frozen is exactly what open claims hold.
        held = Decimal(0)
        for claim in self.context.claims.values():
            if claim["status"] == "pending":
                held += d(claim["amountUsd"] if claim["kind"] == "refund" else claim["heldUsd"])
        assert buckets["frozen"] == held, (buckets, held)

    @invariant()
    def refunds_never_exceed_the_capture(self) -> None:
        status, page = self.call("GET", "/payments?limit=100")
        assert status == 200, page
        for tx in page["data"]:
            refunded, local = d(tx["refundedAmount"]), d(tx["amountLocal"])
            assert 0 <= refunded <= local, tx
            if tx["status"] in ("pending", "failed", "expired"):
                assert refunded == 0, tx
            assert (tx["status"] == "refunded") == (refunded == local), tx
        # USD side too: what refund claims took never exceeds the payment's USD amount.
        usd: dict[str, Decimal] = {}
        for claim in self.context.claims.values():
            if claim["kind"] == "refund":
                usd[claim["transactionId"]] = usd.get(claim["transactionId"], Decimal(0)) + d(
                    claim["amountUsd"]
                )
        amounts = {tx["id"]: d(tx["amount"]) for tx in page["data"]}
        for tx_id, total in usd.items():
            assert total <= amounts[tx_id], (tx_id, total)


PayinMachine.TestCase.settings = settings(
    max_examples=25,
    stateful_step_count=20,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
TestPayinLifecycle = PayinMachine.TestCase
