"""Stateful property test of pay-in and pay-out together, through the HTTP API.

The pay-in machine of tests/api/test_state_machine.py (payments, simulate, refunds, the clock, with
its ledger invariants) extended with the payout side: fund-sandbox, transfer from the pay-in
balance, swap, send (including the simulated provider's rejection and synthetic rails), simulate
payout, and CLABE deposits. After every step, on top of the pay-in invariants (buckets never
negative and equal to the sum of movements, refunded <= captured): payout balances are never
negative, each equals the sum of its movements, and `reserved` is exactly what processing,
debited payouts hold.
"""

from __future__ import annotations

from decimal import Decimal

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule

from simulator.domain.states import PAYOUT_SIMULATE_ACTIONS as SIMULATE_ACTIONS
from simulator.http.keys import PAYOUTS
from tests.api import test_state_machine as payin
from tests.api.test_payouts import RECIPIENTS

d = payin.d
PAYOUT_BUCKETS = ("available", "pending", "reserved")
# (methodId, currency, amount range in minor units): each range sits inside the method's limits.
SENDS = [
    ("po_us_email_wallet", "USD", (100, 20_000)),
    ("po_mx_spei", "MXN", (1_800, 300_000)),
    ("po_br_pix", "BRL", (600, 60_000)),
    ("sbx_po_mx_spei", "MXN", (1_800, 300_000)),
    ("sbx_po_br_pix", "BRL", (600, 60_000)),
]
CURRENCIES = ["USD", "MXN", "BRL"]
REJECTED = {
    "po_us_email_wallet": {"account": "rejected@wallet.example"},
    "po_mx_spei": {"account": "646180000000000009"},
    "po_br_pix": {"account": "rejected@pix.example", "accountType": "EMAIL"},
}
FUNDS_REFUSALS = {"currency_not_funded", "balance_insufficient"}


class MoneyMachine(payin.PayinMachine):
    """Money in (payments, deposits, funding, transfers) and money out (payouts), one app."""

    def __init__(self) -> None:
        super().__init__()
        self.payout_service = self.client.server.app[PAYOUTS]
        self.clabe: str | None = None
        self.payout_ids: list[str] = []

    # -- helpers -------------------------------------------------------------------------------

    def payout_balances(self) -> dict[str, dict[str, Decimal]]:
        status, body = self.call("GET", "/me/payout/balance")
        assert status == 200, body
        return {
            entry["currency"]: {b: d(entry[b]) for b in PAYOUT_BUCKETS}
            for entry in body["balances"]
        }

    def payin_available(self) -> Decimal:
        status, body = self.call("GET", "/me/balance")
        assert status == 200, body
        return d(body["balance"]["available"])

    def available(self, currency: str) -> Decimal:
        entry = self.payout_balances().get(currency)
        return entry["available"] if entry else Decimal(0)

    # -- rules ---------------------------------------------------------------------------------

    @initialize()
    def open_deposit_account(self) -> None:
        status, body = self.call(
            "POST",
            "/me/deposit-accounts",
            {
                "endUserRef": "machine",
                "name": "Ana López",
                "email": "ana@example.com",
                "phone": "5512345678",
                "depositMethodId": "dm_spei_stp",
            },
        )
        assert status == 201, body
        self.clabe = body["account"]["clabe"]

    @initialize()
    def seed_payouts(self) -> None:
        """Every payout operation once, so each example starts with money moved in, swapped and
        sent whatever rules the swarm then enables (hypothesis turns rule subsets off)."""
        for currency, amount in (("USD", 300), ("MXN", 3000), ("BRL", 500)):
            self.fund_sandbox(currency, amount * 100)
        self.transfer(1_000)
        self.do_swap("USD", "MXN", 5_000)
        for method_id, cents in (("po_us_email_wallet", 2_000), ("po_mx_spei", 20_000)):
            self.do_send(method_id, cents, rejected=False)
        self.do_send("po_br_pix", 1_000, rejected=True)

    @rule(cents=st.integers(min_value=100, max_value=500_000))
    def deposit(self, cents: int) -> None:
        status, body = self.call(
            "POST", "/_sim/deposits", {"clabe": self.clabe, "amount": cents / 100}
        )
        assert status == 200, body
        assert body["transaction"]["status"] == "completed"
        assert body["deposit"]["beneficiaryEmail"] == "ana@example.com"

    @rule(currency=st.sampled_from(CURRENCIES), cents=st.integers(min_value=1, max_value=500_000))
    def fund_sandbox(self, currency: str, cents: int) -> None:
        before = self.available(currency)
        status, body = self.call(
            "POST", "/me/payout/fund-sandbox", {"currency": currency, "amount": cents / 100}
        )
        assert status == 200, body
        assert self.available(currency) == before + d(cents) / 100

    @rule(cents=st.integers(min_value=1, max_value=40_000))
    def transfer(self, cents: int) -> None:
        amount = d(cents) / 100
        payin_before, usd_before = self.payin_available(), self.available("USD")
        status, body = self.call("POST", "/me/payout/transfer", {"amount": float(amount)})
        if amount <= payin_before:
            assert status == 200, body
            assert self.payin_available() == payin_before - amount
            assert self.available("USD") == usd_before + amount
        else:
            assert status == 422 and body["error"]["code"] == "balance_insufficient", body
            assert self.payin_available() == payin_before
            assert self.available("USD") == usd_before

    @rule(
        pair=st.permutations(CURRENCIES).map(lambda p: (p[0], p[1])),
        cents=st.integers(min_value=1, max_value=100_000),
    )
    def swap(self, pair: tuple[str, str], cents: int) -> None:
        self.do_swap(*pair, cents)

    def do_swap(self, source: str, target: str, cents: int) -> None:
        amount = d(cents) / 100
        before = self.payout_balances()
        status, body = self.call(
            "POST", "/me/payout/swap", {"from": source, "to": target, "amount": float(amount)}
        )
        have = before.get(source, {}).get("available", Decimal(0))
        after = self.payout_balances()
        if status == 200:
            assert amount <= have
            assert after[source]["available"] == have - amount
            gained = after[target]["available"] - before.get(target, {}).get(
                "available", Decimal(0)
            )
            assert gained == d(body["converted"]) > 0
        else:
            assert status == 422, body
            assert body["error"]["code"] in FUNDS_REFUSALS | {"amount_invalid"}, body
            assert after == before

    # Payout rules take one `data` argument and keep their ids on the machine (no Bundle):
    # hypothesis draws rules with no target and few arguments first, so this keeps sends and
    # simulations frequent within the 20-example budget.

    @rule(data=st.data())
    def send(self, data: st.DataObject) -> None:
        method_id, _, (low, high) = data.draw(st.sampled_from(SENDS), label="method")
        cents = data.draw(st.integers(min_value=low, max_value=high), label="cents")
        rejected = method_id in REJECTED and data.draw(st.booleans(), label="rejected")
        payout_id = self.do_send(method_id, cents, rejected=rejected)
        if payout_id is not None:
            # Often settle it at once too, so simulate runs wherever sends do.
            action = data.draw(st.sampled_from([None, *sorted(SIMULATE_ACTIONS)]), label="then")
            if action is not None:
                self.check_simulate(payout_id, action)

    def do_send(self, method_id: str, cents: int, *, rejected: bool) -> str | None:
        currency = next(c for m, c, _ in SENDS if m == method_id)
        amount = d(cents) / 100
        recipient = {**RECIPIENTS[method_id], **(REJECTED[method_id] if rejected else {})}
        before = self.payout_balances()
        status, body = self.call(
            "POST",
            "/me/payout/send",
            {"methodId": method_id, "amount": float(amount), "recipient": recipient},
        )
        after = self.payout_balances()
        have = before.get(currency, {}).get("available", Decimal(0))
        synthetic = method_id.startswith("sbx_")
        if status == 200:
            payout = body["payout"]
            assert payout["status"] == "processing" and not rejected
            assert synthetic or amount <= have
            debit = Decimal(0) if synthetic else amount
            assert after.get(currency, {}).get("available", Decimal(0)) == have - debit
            self.payout_ids.append(payout["id"])
            return str(payout["id"])
        assert status == 422, body
        code = body["error"]["code"]
        if code == "payout_dispatch_failed":
            assert rejected and amount <= have
        else:
            assert code in FUNDS_REFUSALS and not synthetic and amount > have, body
        assert after == before  # refused before any debit, or debited and reversed
        return None

    @precondition(lambda self: bool(self.payout_ids))
    @rule(data=st.data())
    def simulate_payout(self, data: st.DataObject) -> None:
        payout_id = data.draw(st.sampled_from(self.payout_ids), label="payout")
        self.check_simulate(payout_id, data.draw(st.sampled_from(sorted(SIMULATE_ACTIONS))))

    def check_simulate(self, payout_id: str, action: str) -> None:
        status, before = self.call("GET", f"/me/payout/send/{payout_id}")
        assert status == 200, before
        payout = before["payout"]
        held_before = self.payout_balances()[payout["currency"]]
        status, body = self.call(
            "POST", f"/me/payout/send/{payout_id}/simulate", {"action": action}
        )
        held_after = self.payout_balances()[payout["currency"]]
        if payout["status"] != "processing":
            assert status == 400 and body["error"]["code"] == "invalid_request", body
            assert held_after == held_before
            return
        assert status == 200, body
        outcome = SIMULATE_ACTIONS[action].becomes
        assert body["payout"]["status"] == outcome
        # Only a really-debited payout moves money: back to available on failure, out on success.
        debited = payout["provider"] is not None and outcome != "processing"
        amount = d(payout["amount"]) if debited else Decimal(0)
        assert held_after["reserved"] == held_before["reserved"] - amount
        back = amount if outcome == "failed" else Decimal(0)
        assert held_after["available"] == held_before["available"] + back

    # -- invariants ----------------------------------------------------------------------------

    @invariant()
    def payout_balances_add_up(self) -> None:
        balances = self.payout_balances()
        for currency, buckets in balances.items():
            for name, value in buckets.items():
                assert value >= 0, (currency, name, balances)
        totals: dict[str, Decimal] = {}
        for movement in self.payout_service.ledger.movements(payin.SCOPE):
            currency = movement["currency"]
            totals[currency] = totals.get(currency, Decimal(0)) + d(movement["amount"])
        for currency, total in totals.items():
            buckets = balances[currency]
            assert buckets["available"] + buckets["pending"] + buckets["reserved"] == total
        # Reserved is exactly what processing, debited payouts hold.
        status, page = self.call("GET", "/me/payout/send?status=processing&limit=100")
        assert status == 200, page
        held: dict[str, Decimal] = {}
        for payout in page["data"]:
            if payout["provider"] is not None:  # synthetic payouts debit nothing
                held[payout["currency"]] = held.get(payout["currency"], Decimal(0)) + d(
                    payout["amount"]
                )
        for currency, buckets in balances.items():
            assert buckets["reserved"] == held.get(currency, Decimal(0)), (currency, balances)


MoneyMachine.TestCase.settings = settings(
    max_examples=20,
    stateful_step_count=20,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
TestPayinPayoutLifecycle = MoneyMachine.TestCase
