"""Pay-outs: methods and currencies, the payout balance (fund-sandbox, transfer, swap) and payouts
themselves, with their per-rail recipient checks, the simulated provider and the state machine.

Decisions (docs/decisions.md, "Payouts and deposit accounts"): payouts and their balance belong to
the merchant and environment (like /me/balance), whichever shop's key is used. A real payout debits
`available` into `reserved` before the provider is called; the provider's rejection, or a later
failure, moves it back (the reversal); completion lets it leave. Synthetic `sbx_po_*` payouts
debit nothing and are never sent to a provider.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from decimal import ROUND_DOWN, Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any, Protocol

from simulator.clock import isoformat
from simulator.domain.auth import Principal
from simulator.domain.catalog import PayoutMethod, RecipientField
from simulator.domain.context import DomainContext
from simulator.domain.errors import PAYOUTS, ApiError, invalid_request, unknown_action
from simulator.domain.ids import hex_token
from simulator.domain.ledger import AVAILABLE as PAYIN_AVAILABLE
from simulator.domain.ledger import Ledger
from simulator.domain.money import ZERO, dec, parse_amount, quantum, round_to, usd
from simulator.domain.payout_ledger import (
    AVAILABLE,
    RESERVED,
    CurrencyBalance,
    PayoutLedger,
    sort_currencies,
)
from simulator.domain.ports import Table
from simulator.domain.provider_callbacks import Callback, CallbackVerdict, judge
from simulator.domain.provider_world import DUPLICATE_CALLBACK_GAP, CallbackPlan
from simulator.domain.recipients import check_recipient, mask_account
from simulator.domain.views import absolute

if TYPE_CHECKING:
    from simulator.domain.records import PayoutRecord

PAYOUT_STATUSES = ("processing", "completed", "failed")
# simulate action -> resulting status (None = the spec's no-op `processing`).
SIMULATE_ACTIONS: dict[str, str | None] = {
    "completed": "completed",
    "paid": "completed",
    "failed": "failed",
    "rejected": "failed",
    "refunded": "failed",
    "returned": "failed",
    "processing": None,
}
# The failureReason a simulated failure reports, per action.
SIMULATED_FAILURES = {
    "failed": "provider_error",
    "rejected": "rejected_by_beneficiary_bank",
    "refunded": "refunded_by_provider",
    "returned": "returned_by_beneficiary_bank",
}
SIMULATED_PROVIDER = "simulated"
# The production payout provider's webhook, on the simulated clock.
CALLBACK_JOB = "payout.provider_callback"
RATE_SHOWN = 8  # decimal places of `rate` / `midRate` in quotes (conversions use the exact rate)
HUNDRED = Decimal(100)
MAX_AMOUNT = Decimal(10) ** 12  # major units of any currency


Scope = tuple[str, str]


# ---------------------------------------------------------------------------- simulated provider


@dataclass(frozen=True, slots=True)
class Dispatch:
    accepted: bool
    provider_ref: str | None = None
    failure_reason: str | None = None
    # The provider did not answer (a scripted outage): 503, not a rejection of the recipient.
    unavailable: bool = False
    # Production: when and how the provider's webhook will settle the accepted payout (None: the
    # spec's simulated driver, which completes it at once).
    callback: CallbackPlan | None = None


@dataclass(frozen=True, slots=True)
class PayoutSend:
    """A payout opened by POST /me/payout/send, between its debit and its provider's answer."""

    payout_id: str
    method: PayoutMethod
    recipient: dict[str, str]  # checked, whole: the payout keeps only a masked account
    debited: bool  # false for a synthetic payout, which no provider is sent
    production: bool = False  # the provider world's scripted behaviour applies


class PayoutProvider(Protocol):
    name: str

    async def dispatch(self, method: PayoutMethod, recipient: dict[str, str]) -> Dispatch: ...


class SimulatedPayoutProvider:
    """The spec's simulated driver: rejects the recipients its method's fixture names."""

    name = SIMULATED_PROVIDER

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng  # draws the `providerRef`s

    async def dispatch(self, method: PayoutMethod, recipient: dict[str, str]) -> Dispatch:
        # A real provider call is I/O: yield, so concurrent requests interleave here as they
        # would in production (the debit is already recorded, so none can overspend).
        await asyncio.sleep(0)
        for rule in method.rejections:
            if recipient.get(rule.field) == rule.value:
                return Dispatch(False, failure_reason=rule.failure_reason)
        return Dispatch(True, provider_ref=f"sim_{hex_token(self._rng, 10)}")


# ---------------------------------------------------------------------------- FX for swaps


@dataclass(frozen=True, slots=True)
class Quote:
    source: str
    target: str
    amount: Decimal
    mid_rate: Decimal
    rate: Decimal  # mid rate less the markup: target units per source unit
    markup_pct: Decimal
    converted: Decimal

    def as_json(self) -> dict[str, Any]:
        shown = quantum(RATE_SHOWN)
        return {
            "from": self.source,
            "to": self.target,
            "amount": self.amount,
            "midRate": self.mid_rate.quantize(shown).normalize(),
            "rate": self.rate.quantize(shown).normalize(),
            "markupPct": self.markup_pct,
            "converted": self.converted,
        }


# ---------------------------------------------------------------------------- the service


class PayoutService:
    def __init__(
        self,
        ctx: DomainContext,
        ledger: PayoutLedger,
        payouts: Table[PayoutRecord],
        *,
        provider: PayoutProvider | None = None,
    ) -> None:
        self.ctx = ctx
        self.ledger = ledger
        self._payouts = payouts
        self.provider: PayoutProvider = provider or SimulatedPayoutProvider(ctx.rng)
        self._by_scope: dict[Scope, list[str]] = {}
        for payout in sorted(payouts.values(), key=lambda p: p["createdAt"]):
            self._by_scope.setdefault(_scope_of(payout), []).append(payout["id"])

    @property
    def payin_ledger(self) -> Ledger:
        return self.ctx.ledger

    # -- catalog -------------------------------------------------------------------------------

    def methods_for(self, environment: str) -> list[PayoutMethod]:
        """Synthetic rails first (sandbox only), then the real ones, in fixture order."""
        methods = self.ctx.catalog.payout_methods.values()
        synthetic = [m for m in methods if m.sandbox_only] if environment == "sandbox" else []
        return synthetic + [m for m in methods if not m.sandbox_only]

    def currencies_for(self, environment: str) -> list[str]:
        return sort_currencies({"USD"} | {m.currency for m in self.methods_for(environment)})

    def method(self, principal: Principal, method_id: Any) -> PayoutMethod:
        methods = {m.id: m for m in self.methods_for(principal.environment)}
        if not isinstance(method_id, str) or method_id not in methods:
            raise ApiError(
                "payout_method_unavailable",
                f"No payout method {method_id!r}; use an id from GET /me/payout/methods.",
                param="methodId",
                details={"methodId": method_id, "methodIds": list(methods)},
            )
        return methods[method_id]

    def method_entries(self, principal: Principal, base_url: str) -> list[dict[str, Any]]:
        balances = self.ledger.balances(principal.scope, self.ctx.now())
        entries = []
        for method in self.methods_for(principal.environment):
            entry = balances.get(method.currency)
            available = entry.available if entry else ZERO
            icon = absolute(base_url, f"/static/icons/{method.icon}")
            entries.append(
                {
                    "id": method.id,
                    "name": method.name,
                    "currency": method.currency,
                    "country": method.country,
                    "rail": method.rail,
                    "minUsd": method.min_usd,
                    "maxUsd": method.max_usd,
                    "logoUrl": icon,
                    "iconUrl": icon,
                    # A synthetic rail debits nothing, so it can always send.
                    "funded": method.sandbox_only or available > 0,
                    "currencyAvailable": available,
                    "recipientFields": [_field_json(f) for f in method.recipient_fields],
                }
            )
        return entries

    def currency_entries(self, principal: Principal) -> list[dict[str, Any]]:
        balances = self.ledger.balances(principal.scope, self.ctx.now())
        methods = self.methods_for(principal.environment)
        entries = []
        for currency in self.currencies_for(principal.environment):
            rails = [m for m in methods if m.currency == currency]
            available = balances[currency].available if currency in balances else ZERO
            entries.append(
                {
                    "currency": currency,
                    "country": rails[0].country if rails else "US",
                    "funded": available > 0,
                    "available": available,
                    "rails": [{"id": m.id, "rail": m.rail, "country": m.country} for m in rails],
                }
            )
        return entries

    # -- balance: fund, transfer, swap ---------------------------------------------------------

    def balance_entries(self, scope: Scope) -> list[dict[str, Any]]:
        balances = self.ledger.balances(scope, self.ctx.now())
        if "USD" not in balances:
            balances = {"USD": CurrencyBalance("USD"), **balances}
        return [entry.as_json() for entry in balances.values()]

    def balance_view(self, principal: Principal) -> dict[str, Any]:
        return {
            "merchantId": principal.merchant.id,
            "environment": principal.environment,
            "balances": self.balance_entries(principal.scope),
        }

    def fund_sandbox(self, principal: Principal, body: dict[str, Any]) -> dict[str, Any]:
        if principal.environment != "sandbox":
            raise ApiError("fund_sandbox_only")
        _only_fields(body, ("currency", "amount"))
        currency = self._payout_currency(principal, body.get("currency"), "currency")
        amount = self._amount(body.get("amount"), currency)
        now = self.ctx.now()
        self.ledger.record(principal.scope, currency, "sandbox_fund", amount, AVAILABLE, now=now)
        return {
            "currency": currency,
            "amount": amount,
            "balances": self.balance_entries(principal.scope),
        }

    def transfer(self, principal: Principal, body: dict[str, Any]) -> dict[str, Any]:
        """Move USD from the pay-in available balance to the payout USD balance, atomically."""
        _only_fields(body, ("amount", "currency"))
        if body.get("currency") not in (None, "USD"):  # null is absent
            raise invalid_request(
                "Transfers move USD (the pay-in balance's currency); swap afterwards.",
                [{"path": "currency", "message": "must be USD"}],
                param="currency",
            )
        amount = self._amount(body.get("amount"), "USD")
        now = self.ctx.now()
        scope = principal.scope
        transfer_id = self._new_id("ptr_")
        # No await inside: the check and both movements are one atomic step of the caller's batch.
        available = self.payin_ledger.available(scope, now)
        if amount > available:
            raise self._insufficient(amount, available, "USD")
        self.payin_ledger.record(
            scope, "payout_transfer", -amount, PAYIN_AVAILABLE, effective_at=now, now=now
        )
        self.ledger.record(scope, "USD", "transfer_in", amount, AVAILABLE, now=now, ref=transfer_id)
        payin_after = self.payin_ledger.available(scope, now)
        return {
            "id": transfer_id,
            "amount": amount,
            "currency": "USD",
            "payinAvailable": payin_after,
            "balances": self.balance_entries(scope),
            "createdAt": isoformat(now),
        }

    def quote(
        self,
        principal: Principal,
        source: Any,
        target: Any,
        amount: Any,
        *,
        from_query: bool = False,
    ) -> Quote:
        """A swap at the fixture's rates less the markup; `converted` rounds down (never invents
        money). Rates are static, so a quote holds until the fixtures change."""
        source = self._payout_currency(principal, source, "from")
        target = self._payout_currency(principal, target, "to")
        if source == target:
            raise invalid_request(
                "`from` and `to` must be different currencies.",
                [{"path": "to", "message": "same as from"}],
                param="to",
            )
        value = self._amount(amount, source, from_query=from_query)
        fx = self.ctx.fx
        mid = fx.rate(target) / fx.rate(source)
        rate = mid * (1 - fx.markup_pct / HUNDRED)
        converted = (value * rate).quantize(quantum(fx.decimals(target)), rounding=ROUND_DOWN)
        if converted <= 0:
            raise _amount_invalid(
                f"{value} {source} converts to less than the smallest unit of {target}.",
                converted=converted,
            )
        return Quote(source, target, value, mid, rate, fx.markup_pct, converted)

    def swap(self, principal: Principal, body: dict[str, Any]) -> dict[str, Any]:
        _only_fields(body, ("from", "to", "amount"))
        quote = self.quote(principal, body.get("from"), body.get("to"), body.get("amount"))
        now = self.ctx.now()
        scope = principal.scope
        swap_id = self._new_id("psw_")
        self._check_funds(scope, quote.source, quote.amount, now)
        record = self.ledger.record
        record(scope, quote.source, "swap_out", -quote.amount, AVAILABLE, now=now, ref=swap_id)
        record(scope, quote.target, "swap_in", quote.converted, AVAILABLE, now=now, ref=swap_id)
        return {
            "id": swap_id,
            **quote.as_json(),
            "balances": self.balance_entries(scope),
            "createdAt": isoformat(now),
        }

    # -- payouts -------------------------------------------------------------------------------

    def check_send(
        self, principal: Principal, body: dict[str, Any]
    ) -> tuple[PayoutMethod, Decimal, dict[str, str]]:
        """Every check of POST /me/payout/send that needs no balance: the provider is never
        called for a request that fails one of them."""
        _only_fields(body, ("methodId", "amount", "recipient"))
        if body.get("methodId") is None:
            raise ApiError("missing_field", "`methodId` is required.", param="methodId")
        method = self.method(principal, body["methodId"])
        amount = self._amount(body.get("amount"), method.currency)
        recipient = check_recipient(method, body.get("recipient"))
        amount_usd = usd(amount / self.ctx.fx.rate(method.currency))
        if not method.min_usd <= amount_usd <= method.max_usd:
            bound = "min" if amount_usd < method.min_usd else "max"
            raise ApiError(
                "amount_out_of_limits",
                f"{amount} {method.currency} is {amount_usd} USD; {method.name} pays out "
                f"{method.min_usd}-{method.max_usd} USD.",
                param="amount",
                details={
                    "limit": {"min": method.min_usd, "max": method.max_usd, "currency": "USD"},
                    "boundViolated": bound,
                    "amountUsd": amount_usd,
                },
            )
        return method, amount, recipient

    # POST /me/payout/send is two commits around the provider call; the caller opens the store
    # batch of each (the HTTP handler, which adds the Idempotency-Key's record to both):
    # `open_send` (checks, payout, debit), then `await dispatch`, then `record_dispatch`.

    def open_send(self, principal: Principal, body: dict[str, Any]) -> PayoutSend:
        """Check the send and open its payout, debited unless synthetic (the first commit)."""
        method, amount, recipient = self.check_send(principal, body)
        now = self.ctx.now()
        debited = not method.sandbox_only
        if debited:
            # Check and debit with no await between them: concurrent sends see each other.
            self._check_funds(principal.scope, method.currency, amount, now)
        payout = self._open(principal, method, amount, recipient, debited, now)
        production = principal.environment == "production"
        return PayoutSend(payout["id"], method, recipient, debited, production)

    def resume_send(self, principal: Principal, body: dict[str, Any], payout_id: str) -> PayoutSend:
        """The send of a payout an earlier request with this body opened, whose provider call never
        finished (the server stopped in between): to finish it, not to open another. Its debit is
        made; the body is checked again for the recipient, which is never stored."""
        method, _, recipient = self.check_send(principal, body)
        payout = self.get(principal, payout_id)
        production = principal.environment == "production"
        return PayoutSend(payout["id"], method, recipient, payout["debited"], production)

    async def dispatch(self, send: PayoutSend) -> Dispatch:
        """The provider call (a synthetic payout has none: it is accepted as it is)."""
        if not send.debited:
            return Dispatch(True)
        dispatch = await self.provider.dispatch(send.method, send.recipient)
        world = self.ctx.providers
        scripted = world.payout_provider() if send.production else None
        if scripted is None:
            return dispatch
        # Production: the provider world's behaviour now (an outage or a scripted rejection),
        # after the recipients the method's fixture always rejects.
        answer = world.dispatch_payout(
            scripted.id, refused=None if dispatch.accepted else dispatch.failure_reason
        )
        if answer.outcome == "unavailable":
            return Dispatch(False, failure_reason=answer.reason, unavailable=True)
        if answer.outcome == "declined":
            return Dispatch(False, failure_reason=answer.reason)
        return Dispatch(True, provider_ref=dispatch.provider_ref, callback=answer.callback)

    def record_dispatch(self, send: PayoutSend, dispatch: Dispatch) -> PayoutRecord:
        """The provider's answer (the second commit); the payout as it now stands. A rejection is
        recorded here (the debit reversed), then raised by `rejected` once committed."""
        payout = self._load(send.payout_id)
        # A simulate that raced the provider call already settled it: keep that outcome.
        if send.debited and payout["status"] == "processing":
            payout.update({"provider": self.provider.name, "providerRef": dispatch.provider_ref})
            # The trace names the scripted payout provider a production payout went to (the
            # payout's own `provider` field keeps the spec's driver name).
            scripted = (
                self.ctx.providers.payout_provider_id()
                if payout["environment"] == "production"
                else None
            )
            provider = scripted or self.provider.name
            answer: dict[str, Any] = {"provider": provider, "accepted": dispatch.accepted}
            if dispatch.provider_ref:
                answer["providerRef"] = dispatch.provider_ref
            if dispatch.failure_reason:
                answer["failureReason"] = dispatch.failure_reason
            # The call and its answer, recorded together in the answer's unit of work.
            self.ctx.trace.record_many(
                payout,
                [("dispatched", {"provider": provider}), ("provider_answer", answer)],
            )
            coverage = self.ctx.coverage
            if not dispatch.accepted:
                # Answered synchronously (422), so no payout.failed event: nobody is waiting.
                coverage.reach("payout.send_rejected", payout)
                self._fail(
                    payout, dispatch.failure_reason or "rejected", emit=False, cause="provider"
                )
            elif payout["environment"] == "production":
                coverage.reach("payout.send", payout)
                self._await_provider(payout, dispatch.callback)
            else:
                coverage.reach("payout.send", payout)
                self._save(payout)
        self.ctx.providers.flush()
        return payout

    def _await_provider(self, payout: PayoutRecord, callback: CallbackPlan | None) -> None:
        """An accepted production payout: the provider confirms it in its answer (the spec's
        simulated driver, or a callback 0 s after), or its webhook settles it later (scheduled
        here; never, with no callback: it stays processing)."""
        if callback is None or callback.after_seconds == 0:
            self.ctx.coverage.reach("payout.provider_completed", payout)
            self._complete(payout, cause="provider")
            return
        self._save(payout)
        if callback.after_seconds is None:
            return
        deliveries = 2 if callback.mode == "duplicate" else 1
        for delivery in range(1, deliveries + 1):
            self.ctx.jobs.schedule(
                CALLBACK_JOB,
                payout["createdAt"]
                + callback.after_seconds
                + (delivery - 1) * DUPLICATE_CALLBACK_GAP,
                {
                    "payoutId": payout["id"],
                    "outcome": callback.outcome,
                    "providerId": self.ctx.providers.payout_provider_id(),
                    "delivery": delivery,
                },
            )

    def accept_callback(self, payload: dict[str, Any]) -> CallbackVerdict:
        """The payout provider's webhook about a production payout: applied while the payout is
        processing (completed, or failed with its debit reversed and payout.failed), else ignored
        (a duplicate, or late) and nothing changes. Every callback is recorded and counted."""
        payout_id, outcome = payload["payoutId"], payload["outcome"]
        payout = self._payouts.get(payout_id)
        before = payout["status"] if payout is not None else None
        target = "completed" if outcome in ("completed", "paid") else "failed"
        callback = Callback(
            "payout",
            payout_id,
            payload.get("providerId"),
            outcome,
            int(payload.get("delivery", 1)),
        )
        verdict = judge(before, awaiting="processing", reports=target)
        if payout is not None and verdict.applied:
            callback.trace_received(self.ctx, payout)
            if target == "completed":
                self.ctx.coverage.reach("payout.provider_completed", payout)
                self._complete(payout, cause="provider_callback")
            else:
                self.ctx.coverage.reach("payout.provider_failed", payout)
                failure = SIMULATED_FAILURES.get(outcome, "provider_error")
                self._fail(payout, failure, cause="provider_callback")
        callback.close(self.ctx, payout, verdict, before)
        return verdict

    def callback_job(self, payload: dict[str, Any]) -> None:
        self.accept_callback(payload)

    @staticmethod
    def rejected(payout: PayoutRecord, dispatch: Dispatch) -> ApiError:
        if dispatch.unavailable:
            return ApiError(
                "service_unavailable",
                "The payout provider did not answer (an outage); the debit was reversed. "
                "Retry with exponential backoff.",
                details={"failureReason": dispatch.failure_reason, "payoutId": payout["id"]},
            )
        return ApiError(
            "payout_dispatch_failed",
            f"The provider rejected the payout to this recipient: {dispatch.failure_reason}. "
            "The debit was reversed.",
            details={"failureReason": dispatch.failure_reason, "payoutId": payout["id"]},
        )

    def _open(
        self,
        principal: Principal,
        method: PayoutMethod,
        amount: Decimal,
        recipient: dict[str, str],
        debited: bool,
        now: float,
    ) -> PayoutRecord:
        payout_id = self._new_id("po_")
        payout: PayoutRecord = {
            "id": payout_id,
            "merchantId": principal.merchant.id,
            "environment": principal.environment,
            "shopId": principal.shop.id if principal.shop else None,
            "methodId": method.id,
            "methodName": method.name,
            "rail": method.rail,
            "currency": method.currency,
            "amount": str(amount),
            "status": "processing",
            "debited": debited,
            "provider": None,
            "providerRef": None,
            # The document is checked and never stored (like a pay-in's buyer document).
            "recipient": {
                "name": recipient.get("name"),
                "account": mask_account(recipient.get("account", "")),
            },
            "failureReason": None,
            "createdAt": now,
            "updatedAt": now,
            "completedAt": None,
            "failedAt": None,
        }
        self._payouts.put(payout_id, payout)
        self._by_scope.setdefault(principal.scope, []).append(payout_id)
        self.ctx.trace.record(
            payout,
            "created",
            methodId=method.id,
            rail=method.rail,
            amount=str(amount),
            currency=method.currency,
            debited=debited,
        )
        if debited:
            record = self.ledger.record
            scope = principal.scope
            record(
                scope, method.currency, "payout_debit", -amount, AVAILABLE, now=now, ref=payout_id
            )
            record(scope, method.currency, "payout_debit", amount, RESERVED, now=now, ref=payout_id)
        return payout

    def _complete(self, payout: PayoutRecord, *, cause: str = "provider") -> None:
        now = self.ctx.now()
        before = payout["status"]
        if payout["debited"]:
            self.ledger.record(
                _scope_of(payout),
                payout["currency"],
                "payout_paid",
                -dec(payout["amount"]),
                RESERVED,
                now=now,
                ref=payout["id"],
            )
        payout.update({"status": "completed", "completedAt": now, "updatedAt": now})
        self._save(payout)
        self.ctx.trace.status_changed(payout, before, cause)
        self._emit(payout, "payout.completed")

    def _fail(
        self, payout: PayoutRecord, reason: str, *, emit: bool = True, cause: str = "provider"
    ) -> None:
        now = self.ctx.now()
        before = payout["status"]
        if payout["debited"]:
            scope, currency, amount = _scope_of(payout), payout["currency"], dec(payout["amount"])
            ref = payout["id"]
            self.ledger.record(
                scope, currency, "payout_reversal", -amount, RESERVED, now=now, ref=ref
            )
            self.ledger.record(
                scope, currency, "payout_reversal", amount, AVAILABLE, now=now, ref=ref
            )
        payout.update(
            {"status": "failed", "failureReason": reason, "failedAt": now, "updatedAt": now}
        )
        self._save(payout)
        self.ctx.trace.status_changed(payout, before, f"{cause}: {reason}")
        if emit:
            self._emit(payout, "payout.failed")

    def simulate(self, principal: Principal, payout_id: str, action: Any) -> PayoutRecord:
        if principal.environment != "sandbox":
            raise ApiError("simulate_sandbox_only")
        if not isinstance(action, str) or action not in SIMULATE_ACTIONS:
            raise unknown_action(SIMULATE_ACTIONS)
        payout = self.get(principal, payout_id)
        if payout["status"] != "processing":
            raise ApiError(
                "invalid_request",
                f"Payout {payout_id} is {payout['status']}; `{action}` requires processing.",
                param="action",
                details={"status": payout["status"], "requiredStatus": "processing"},
            )
        target = SIMULATE_ACTIONS[action]
        self.ctx.coverage.reach(f"payout.simulate_{target or 'processing'}", payout)
        self.ctx.trace.record(payout, "simulate", action=action)
        if target == "completed":
            self._complete(payout, cause="simulate")
        elif target == "failed":
            self._fail(payout, SIMULATED_FAILURES[action], cause="simulate")
        return payout

    # -- reads ---------------------------------------------------------------------------------

    def find(self, payout_id: str) -> PayoutRecord | None:
        """Any merchant's payout by id (the control plane checks ownership itself)."""
        return self._payouts.get(payout_id)

    def get(self, principal: Principal, payout_id: str) -> PayoutRecord:
        payout = self._payouts.get(payout_id)
        if payout is None or _scope_of(payout) != principal.scope:
            raise ApiError("payout_not_found", f"No payout {payout_id}.", param="id")
        return payout

    def list(
        self,
        principal: Principal,
        *,
        status: str | None,
        method_id: str | None,
        limit: int,
        offset: int,
    ) -> tuple[list[PayoutRecord], int]:
        total = 0
        page: list[PayoutRecord] = []
        for payout_id in reversed(self._by_scope.get(principal.scope, [])):
            payout = self._payouts.get(payout_id)
            if payout is None:
                continue
            if status is not None and payout["status"] != status:
                continue
            if method_id is not None and payout["methodId"] != method_id:
                continue
            if offset <= total < offset + limit:
                page.append(payout)
            total += 1
        return page, total

    def view(self, payout: PayoutRecord) -> dict[str, Any]:
        view: dict[str, Any] = {
            "id": payout["id"],
            "methodId": payout["methodId"],
            "methodName": payout["methodName"],
            "method": payout["rail"],
            "currency": payout["currency"],
            "amount": dec(payout["amount"]),
            "status": payout["status"],
            "provider": payout["provider"],
            "providerRef": payout["providerRef"],
            "environment": payout["environment"],
            "recipient": payout["recipient"],
            "createdAt": isoformat(payout["createdAt"]),
            "completedAt": _iso(payout["completedAt"]),
        }
        if payout["status"] == "failed":
            view["failureReason"] = payout["failureReason"]
        timestamps = {"created": view["createdAt"], "updated": isoformat(payout["updatedAt"])}
        for key in ("completedAt", "failedAt"):
            if (at := payout[key]) is not None:
                timestamps[key.removesuffix("At")] = isoformat(at)
        view["timestamps"] = timestamps
        return view

    # -- helpers -------------------------------------------------------------------------------

    def _check_funds(self, scope: Scope, currency: str, amount: Decimal, now: float) -> None:
        available = self.ledger.available(scope, currency, now)
        if available <= 0:
            raise ApiError(
                "currency_not_funded",
                f"There is no payout balance in {currency}: fund it, transfer USD or swap first.",
                param="amount",
                details={"currency": currency, "available": available},
            )
        if amount > available:
            raise self._insufficient(amount, available, currency)

    def _insufficient(self, amount: Decimal, available: Decimal, currency: str) -> ApiError:
        shortfall = amount - available
        return ApiError(
            "balance_insufficient",
            f"{amount} {currency} exceeds the available {available} {currency}.",
            param="amount",
            details={
                "reason": "exceeds_available",
                "currency": currency,
                "available": available,
                "shortfall": shortfall,
                "availableUsd": self._usd(available, currency),
                "shortfallUsd": self._usd(shortfall, currency),
            },
        )

    def _usd(self, amount: Decimal, currency: str) -> Decimal:
        return usd(amount / self.ctx.fx.rate(currency))

    def _payout_currency(self, principal: Principal, value: Any, param: str) -> str:
        if value is None:
            raise ApiError("missing_field", f"`{param}` is required.", param=param)
        currency = self.ctx.fx.check_currency(value, param=param)
        allowed = self.currencies_for(principal.environment)
        if currency not in allowed:
            raise invalid_request(
                f"{currency} is not a payout currency; use one of {', '.join(allowed)}.",
                [{"path": param, "message": "not a payout currency"}],
                param=param,
                currencies=allowed,
            )
        return currency

    def _amount(self, raw: Any, currency: str, *, from_query: bool = False) -> Decimal:
        """A positive amount with no more decimals than `currency` has, else 422 amount_invalid
        (payout endpoints answer 422 where pay-ins answer 400); absent is 400 missing_field.
        Only a query string (a swap quote) may carry the number as text."""
        if raw is None:
            raise ApiError("missing_field", "`amount` is required.", param="amount")
        if from_query and isinstance(raw, str):
            try:
                raw = Decimal(raw.strip())
            except InvalidOperation:
                raise _amount_invalid("`amount` must be a number.") from None
        try:
            amount = parse_amount(raw)
        except ApiError as error:
            raise _amount_invalid(error.message) from None
        # Far above any real payout, and keeps Decimal arithmetic inside its 28 digits.
        if amount > MAX_AMOUNT:
            raise _amount_invalid(f"`amount` may be at most {MAX_AMOUNT:,} {currency}.")
        decimals = self.ctx.fx.decimals(currency)
        if round_to(amount, decimals) != amount:
            raise _amount_invalid(f"{currency} amounts have {decimals} decimal places at most.")
        return amount

    def _new_id(self, prefix: str) -> str:
        # From the app's generator, like transaction ids (reproducible under a seed). A seeded
        # server restarted on the same data dir could draw an id again: never reuse a payout's.
        while True:
            ident = f"{prefix}{self.ctx.rng.getrandbits(96):024x}"
            if self._payouts.get(ident) is None:
                return ident

    def _load(self, payout_id: str) -> PayoutRecord:
        payout = self._payouts.get(payout_id)
        assert payout is not None, payout_id
        return payout

    def _save(self, payout: PayoutRecord) -> None:
        self._payouts.put(payout["id"], payout)

    def _emit(self, payout: PayoutRecord, event_type: str) -> None:
        self.ctx.events.emit(
            payout["merchantId"], payout["environment"], event_type, self.view(payout)
        )


def _scope_of(record: PayoutRecord) -> Scope:
    return (record["merchantId"], record["environment"])


def _iso(value: float | None) -> str | None:
    return None if value is None else isoformat(value)


def _amount_invalid(message: str, **details: Any) -> ApiError:
    return ApiError(
        "amount_invalid", message, param="amount", details=details or None, surface=PAYOUTS
    )


def _field_json(field: RecipientField) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "key": field.key,
        "label": field.label,
        "required": field.required,
        "type": field.type,
    }
    if field.options is not None:
        entry["options"] = [{"value": o.value, "label": o.label} for o in field.options]
    return entry


def _only_fields(body: dict[str, Any], allowed: tuple[str, ...]) -> None:
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        raise invalid_request(
            f"Unknown field(s): {', '.join(unknown)} (allowed: {', '.join(allowed)}).",
            [{"path": key, "message": "unknown field"} for key in unknown],
            param=unknown[0],
        )
