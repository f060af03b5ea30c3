"""Payouts themselves: POST /me/payout/send (its per-rail recipient checks, the debit, the
provider's answer), the provider's callbacks, simulate, and the reads. The payout account (methods,
currencies, the balance and its movements) is `account.py`; the provider a payout is sent to
is `provider.py`.

Decisions (docs/decisions.md, "Payouts and deposit accounts"): a real payout debits `available`
into `reserved` before the provider is called; the provider's rejection, or a later failure, moves
it back (the reversal); completion lets it leave. Synthetic `sbx_po_*` payouts debit nothing and are
never sent to a provider.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from simulator.clock import isoformat
from simulator.domain.auth import Principal, Scope
from simulator.domain.catalog import PayoutMethod
from simulator.domain.context import DomainContext
from simulator.domain.errors import ApiError
from simulator.domain.money import dec, usd
from simulator.domain.payouts.account import PayoutAccount
from simulator.domain.payouts.index import PayoutIndex
from simulator.domain.payouts.ledger import AVAILABLE, RESERVED, PayoutLedger
from simulator.domain.payouts.provider import (
    Dispatch,
    PayoutProvider,
    SimulatedPayoutProvider,
)
from simulator.domain.payouts.request import parse_send_request
from simulator.domain.payouts.rules import check_recipient, mask_account
from simulator.domain.ports import Table
from simulator.domain.providers.callbacks import Callback, CallbackVerdict, judge
from simulator.domain.providers.world import DUPLICATE_CALLBACK_GAP, CallbackPlan
from simulator.domain.states import PAYOUT_SIMULATE_ACTIONS, Transition, payout_transition

if TYPE_CHECKING:
    from simulator.domain.records import PayoutRecord

PAYOUT_STATUSES = ("processing", "completed", "failed")
# The payouts' transition table's rows a provider's answer applies (simulate and a provider's
# callback name theirs).
COMPLETED = PAYOUT_SIMULATE_ACTIONS["completed"]
FAILED = PAYOUT_SIMULATE_ACTIONS["failed"]
# The production payout provider's webhook, on the simulated clock.
CALLBACK_JOB = "payout.provider_callback"


@dataclass(frozen=True, slots=True)
class PayoutSend:
    """A payout opened by POST /me/payout/send, between its debit and its provider's answer."""

    payout_id: str
    method: PayoutMethod
    recipient: dict[str, str]  # checked, whole: the payout keeps only a masked account
    debited: bool  # false for a synthetic payout, which no provider is sent
    production: bool = False  # the provider world's scripted behaviour applies


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
        # Methods, currencies and the balance: what a send is checked and debited against.
        self.account = PayoutAccount(ctx, ledger)
        # What each status the table reaches does to the money, besides the status.
        self.effects: dict[str, Callable[[PayoutRecord, float], None]] = {
            "completed": self._paid,
            "failed": self._reversed,
        }
        self._payouts = payouts
        self.provider: PayoutProvider = provider or SimulatedPayoutProvider(ctx.rng)
        self._index = PayoutIndex(payouts.scan())

    # -- payouts -------------------------------------------------------------------------------

    def check_send(
        self, principal: Principal, body: dict[str, Any]
    ) -> tuple[PayoutMethod, Decimal, dict[str, str]]:
        """Every check of POST /me/payout/send that needs no balance: the provider is never
        called for a request that fails one of them."""
        request = parse_send_request(body)
        method = self.account.method(principal, request.method_id)
        amount = self.account.amount(request.amount, method.currency)
        recipient = check_recipient(method, request.recipient)
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
            self.account.check_funds(principal.scope, method.currency, amount, now)
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
        reply = world.dispatch_payout(
            scripted.id, refused=None if dispatch.accepted else dispatch.failure_reason
        )
        if reply.outcome == "unavailable":
            return Dispatch(False, failure_reason=reply.reason, unavailable=True)
        if reply.outcome == "declined":
            return Dispatch(False, failure_reason=reply.reason)
        return Dispatch(True, provider_ref=dispatch.provider_ref, callback=reply.callback)

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
                reason = dispatch.failure_reason or "rejected"
                self._move(payout, FAILED, cause="provider", reason=reason, emit=False)
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
            self._move(payout, COMPLETED, cause="provider")
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
        transition = PAYOUT_SIMULATE_ACTIONS.get(outcome)
        if transition is None or transition.becomes == transition.requires:
            transition = FAILED  # an outcome that settles nothing fails it, as a provider error
        target = transition.becomes
        callback = Callback(
            "payout",
            payout_id,
            payload.get("providerId"),
            outcome,
            int(payload.get("delivery", 1)),
        )
        verdict = judge(before, awaiting=transition.requires, reports=target)
        if payout is not None and verdict.applied:
            callback.trace_received(self.ctx, payout)
            self.ctx.coverage.reach(f"payout.provider_{target}", payout)
            self._move(payout, transition, cause="provider_callback")
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
        self._index.add(payout)
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

    def _move(
        self,
        payout: PayoutRecord,
        transition: Transition,
        *,
        cause: str,
        reason: str | None = None,
        emit: bool = True,
    ) -> None:
        """One row of the payouts' table: the status, the money it moves and its events
        (`emit=False`: a rejection answered synchronously, which nobody waits for). A failure
        reports `reason`, else the row's."""
        before = payout["status"]
        if transition.becomes == before:
            return  # the spec's no-op `processing`
        now = self.ctx.now()
        self.effects[transition.becomes](payout, now)
        if transition.becomes == "failed":
            failure = reason or transition.failure_reason
            payout.update({"status": "failed", "failureReason": failure, "failedAt": now})
            cause = f"{cause}: {failure}"
        else:
            payout.update({"status": "completed", "completedAt": now})
        payout["updatedAt"] = now
        self._save(payout)
        self.ctx.trace.status_changed(payout, before, cause)
        if emit:
            for event_type in transition.events:
                self._emit(payout, event_type)

    def _paid(self, payout: PayoutRecord, now: float) -> None:
        """Completion: the reserved debit leaves."""
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

    def _reversed(self, payout: PayoutRecord, now: float) -> None:
        """Failure: the reserved debit goes back to available (the reversal)."""
        if payout["debited"]:
            scope, currency, amount = _scope_of(payout), payout["currency"], dec(payout["amount"])
            ref = payout["id"]
            self.ledger.record(
                scope, currency, "payout_reversal", -amount, RESERVED, now=now, ref=ref
            )
            self.ledger.record(
                scope, currency, "payout_reversal", amount, AVAILABLE, now=now, ref=ref
            )

    def simulate(self, principal: Principal, payout_id: str, action: Any) -> PayoutRecord:
        if principal.environment != "sandbox":
            raise ApiError("simulate_sandbox_only")
        transition = payout_transition(action)
        payout = self.get(principal, payout_id)
        if payout["status"] != transition.requires:
            raise ApiError(
                "invalid_request",
                f"Payout {payout_id} is {payout['status']}; `{action}` requires "
                f"{transition.requires}.",
                param="action",
                details={"status": payout["status"], "requiredStatus": transition.requires},
            )
        self.ctx.coverage.reach(f"payout.simulate_{transition.becomes}", payout)
        self.ctx.trace.record(payout, "simulate", action=action)
        self._move(payout, transition, cause="simulate")
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
        ids, total = self._index.page(principal.scope, status, method_id, limit, offset)
        return [payout for payout_id in ids if (payout := self._payouts.get(payout_id))], total

    def follow_rollback(self, payout_id: str, restored: PayoutRecord | None) -> None:
        """Follow the store when a failed batch undoes a write of this payout (wire it with the
        table's `on_rollback`): the lists hold it as the store does."""
        if restored is None:
            self._index.forget(payout_id)
        else:
            self._index.follow(restored)

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
        self._index.follow(payout)

    def _emit(self, payout: PayoutRecord, event_type: str) -> None:
        self.ctx.events.emit(
            payout["merchantId"], payout["environment"], event_type, self.view(payout)
        )


def _scope_of(record: PayoutRecord) -> Scope:
    return (record["merchantId"], record["environment"])


def _iso(value: float | None) -> str | None:
    return None if value is None else isoformat(value)
