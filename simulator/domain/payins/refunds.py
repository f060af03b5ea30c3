"""Refunds and chargebacks: both are claims (`CLM-...`) that hold money in `frozen` while open.

Decisions (docs/decisions.md): a refund claim starts `pending`, holds its USD value out of
`available` at once and resolves (`resolved`/`refunded`) one simulated hour later, when the held
money leaves. A chargeback claim freezes the transaction's USD amount and resolves after 7 simulated
days as `merchant_lost`: the frozen money leaves, whatever could not be frozen is taken from
`available` then, and the tier's chargeback fee is charged.

Money for a chargeback or a provider refund is drawn first from the payment's own settlement when it
has not landed yet (a debit dated at its settlement instant), then from `available`; what neither
covers is not debited and shows as a ledger warning. A merchant never keeps the money of a payment
the buyer got back, and no bucket goes below zero.

One dispute per payment: once charged back, a payment can be neither refunded nor disputed again
(the buyer already gets the money back through the dispute).
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

from simulator.domain.auth import Principal
from simulator.domain.context import DomainContext
from simulator.domain.errors import ApiError, issues_error
from simulator.domain.ids import new_id
from simulator.domain.ledger import AVAILABLE, FROZEN
from simulator.domain.money import ZERO, dec, has_decimals_at_most, parse_amount, usd

if TYPE_CHECKING:
    from simulator.domain.records import ClaimRecord, TransactionRecord

MAX_REASON = 500
CLAIM_RESOLVE_AFTER = 3600.0
CHARGEBACK_RESOLVE_AFTER = 7 * 86_400.0


class RefundService:
    def __init__(self, ctx: DomainContext) -> None:
        self.ctx = ctx
        self.emit = ctx.emitter

    def _remaining(self, tx: TransactionRecord) -> tuple[Decimal, Decimal]:
        """(local, USD) still refundable."""
        return (
            dec(tx["amountLocal"]) - dec(tx["refundedLocal"]),
            dec(tx["amount"]) - dec(tx["refundedUsd"]),
        )

    def _usd_share(self, tx: TransactionRecord, amount_local: Decimal) -> Decimal:
        """The USD value of refunding `amount_local` more.

        Rounded on the running total (USD of everything refunded so far, minus what earlier refunds
        counted): rounding each refund on its own could add up to more USD than the payment brought,
        and the last refund leaves no dust behind.
        """
        total_usd = dec(tx["amount"])
        refunded_local = dec(tx["refundedLocal"]) + amount_local
        running = min(usd(refunded_local / dec(tx["amountLocal"]) * total_usd), total_usd)
        return max(running - dec(tx["refundedUsd"]), ZERO)

    def _refuse_if_disputed(self, tx: TransactionRecord) -> None:
        claim_id = tx.get("chargebackClaimId")
        if claim_id:
            raise ApiError(
                "invalid_request",
                f"Transaction {tx['id']} is charged back ({claim_id}): the buyer gets the money "
                "back through the dispute, so it can be neither refunded nor disputed again.",
                param="id",
                details={"status": tx["status"], "chargebackClaimId": claim_id},
            )

    def _draw(self, tx: TransactionRecord, wanted: Decimal, now: float) -> tuple[Decimal, Decimal]:
        """Split `wanted` USD into (from the payment's own settlement still on its way, from
        `available` now); the rest, if any, cannot be covered."""
        ledger = self.ctx.ledger
        scope = (tx["merchantId"], tx["environment"])
        from_settlement = ZERO
        settles_at = tx.get("availableAt")
        if settles_at is not None and settles_at > now:
            from_settlement = min(wanted, ledger.settling(scope, tx["id"], settles_at))
        from_available = min(wanted - from_settlement, max(ledger.available(scope, now), ZERO))
        return from_settlement, from_available

    def refund(
        self, principal: Principal, transaction_id: str, body: dict[str, Any]
    ) -> ClaimRecord:
        ctx = self.ctx
        tx = ctx.transactions.visible(principal, transaction_id)
        reason = _checked_reason(body)
        self._refuse_unless_refundable(tx)
        amount = self._refund_amount(tx, body.get("amount"))
        amount_usd = self._usd_share(tx, amount)
        now = ctx.now()
        self._refuse_beyond_available(principal, amount_usd, now)
        claim = self._open_claim(tx, "refund", amount, amount_usd, reason or None, now)
        ctx.coverage.reach("claim.refund", tx)
        self._hold(tx, claim, "refund_hold", amount_usd, now, effective_at=now)
        before = tx["status"]
        self._mark_refunded(tx, amount, amount_usd, now)
        ctx.trace.record(
            tx,
            "refund",
            claimId=claim["id"],
            amount=str(amount),
            currency=tx["currencyLocal"],
            amountUsd=str(amount_usd),
        )
        if tx["status"] != before:
            ctx.trace.status_changed(tx, before, "refund")
        ctx.jobs.schedule("claim.resolve", now + CLAIM_RESOLVE_AFTER, {"claimId": claim["id"]})
        self.emit.claim(claim, "claim.opened", at=now)
        self.emit.transaction(tx, "payment.refunded", at=now)
        return claim

    def _refuse_unless_refundable(self, tx: TransactionRecord) -> None:
        if tx["status"] not in ("completed", "refunded"):
            raise ApiError(
                "invalid_request",
                f"Transaction {tx['id']} is {tx['status']}; only completed payments can be "
                "refunded.",
                param="id",
                details={"status": tx["status"]},
            )
        self._refuse_if_disputed(tx)

    def _refund_amount(self, tx: TransactionRecord, requested: Any) -> Decimal:
        """The local amount to refund: what the body asks (in the currency's decimals), or all
        that is still refundable; never more than that."""
        currency = tx["currencyLocal"]
        decimals = self.ctx.fx.decimals(currency)
        remaining_local, _ = self._remaining(tx)
        if requested is None:
            amount = remaining_local
        else:
            amount = parse_amount(requested)
            if not has_decimals_at_most(amount, decimals):
                raise ApiError(
                    "amount_invalid",
                    f"{currency} amounts have {decimals} decimal places at most.",
                    param="amount",
                )
        if amount <= ZERO or amount > remaining_local:
            raise ApiError(
                "balance_insufficient",
                f"The refund of {amount} {currency} exceeds the {remaining_local} {currency} "
                "still refundable on this payment.",
                param="amount",
                details={
                    "reason": "exceeds_remaining",
                    "remainingAmount": remaining_local,
                    "currency": currency,
                },
            )
        return amount

    def _refuse_beyond_available(
        self, principal: Principal, amount_usd: Decimal, now: float
    ) -> None:
        available = self.ctx.ledger.available(principal.scope, now)
        if amount_usd > available:
            raise ApiError(
                "balance_insufficient",
                f"The refund needs {amount_usd} USD; the available balance is {available} USD.",
                param="amount",
                details={
                    "reason": "exceeds_available",
                    "availableUsd": available,
                    "shortfallUsd": amount_usd - available,
                },
            )

    def _open_claim(
        self,
        tx: TransactionRecord,
        kind: str,
        amount: Decimal,
        amount_usd: Decimal,
        reason: str | None,
        now: float,
    ) -> ClaimRecord:
        claim: ClaimRecord = {
            "id": new_id(self.ctx.rng, "CLM-"),
            "kind": kind,
            "merchantId": tx["merchantId"],
            "shopId": tx["shopId"],
            "environment": tx["environment"],
            "transactionId": tx["id"],
            "amount": str(amount),
            "amountUsd": str(amount_usd),
            "heldUsd": "0",
            "currency": tx["currencyLocal"],
            "status": "pending",
            "resolution": None,
            "reason": reason,
            "createdAt": now,
            "resolvedAt": None,
        }
        self.ctx.claims.put(claim["id"], claim)
        return claim

    def _mark_refunded(
        self, tx: TransactionRecord, amount: Decimal, amount_usd: Decimal, now: float
    ) -> None:
        tx["refundedLocal"] = str(dec(tx["refundedLocal"]) + amount)
        tx["refundedUsd"] = str(dec(tx["refundedUsd"]) + amount_usd)
        tx["updatedAt"] = now
        if dec(tx["refundedLocal"]) >= dec(tx["amountLocal"]):
            if tx["status"] == "completed":
                self.ctx.coverage.reach("transaction.refund_full", tx)
            tx["status"] = "refunded"
            tx["refundedAt"] = now
        self.ctx.transactions.save(tx)

    def _hold(
        self,
        tx: TransactionRecord,
        claim: ClaimRecord,
        kind: str,
        amount_usd: Decimal,
        now: float,
        *,
        effective_at: float,
    ) -> None:
        """Move `amount_usd` into `frozen` for `claim` now, out of `available` at `effective_at`
        (now, or the payment's settlement instant when drawn on money still on its way)."""
        if not amount_usd:
            return
        scope = (tx["merchantId"], tx["environment"])
        ids = {"transaction_id": tx["id"], "claim_id": claim["id"]}
        ledger = self.ctx.ledger
        ledger.record(
            scope, kind, -amount_usd, AVAILABLE, effective_at=effective_at, now=now, **ids
        )
        ledger.record(scope, kind, amount_usd, FROZEN, effective_at=now, now=now, **ids)

    def record_provider_refund(self, tx: TransactionRecord) -> None:
        """The provider refunded the whole remainder: debit it from the payment's own settlement
        still on its way, then from `available`; a shortfall is shown, not debited. The caller
        (`PaymentService.apply`) fires the transition's events."""
        self._refuse_if_disputed(tx)
        ctx = self.ctx
        now = ctx.now()
        remaining_local, remaining_usd = self._remaining(tx)
        scope = (tx["merchantId"], tx["environment"])
        from_settlement, from_available = self._draw(tx, remaining_usd, now)
        # A draw on the settlement is not zero only when the payment has its instant (`_draw`):
        # the `now` default is never a debit's date.
        for debit, effective_at in (
            (from_settlement, tx.get("availableAt", now)),
            (from_available, now),
        ):
            if debit:
                ctx.ledger.record(
                    scope,
                    "refund",
                    -debit,
                    AVAILABLE,
                    effective_at=effective_at,
                    now=now,
                    transaction_id=tx["id"],
                )
        uncovered = remaining_usd - from_settlement - from_available
        if uncovered > ZERO:
            ctx.ledger.record(
                scope,
                "uncovered_refund",
                ZERO,
                AVAILABLE,
                effective_at=now,
                now=now,
                transaction_id=tx["id"],
            )
            tx["uncoveredUsd"] = str(uncovered)
        self._mark_refunded(tx, remaining_local, remaining_usd, now)
        tx["status"] = "refunded"
        tx.setdefault("refundedAt", now)
        ctx.transactions.save(tx)

    def open_chargeback(self, tx: TransactionRecord) -> ClaimRecord:
        """Dispute the payment: a chargeback claim freezing its amount. The caller
        (`PaymentService.apply`) fires the transition's events."""
        self._refuse_if_disputed(tx)
        ctx = self.ctx
        now = ctx.now()
        amount_usd = dec(tx["amount"]) - dec(tx["refundedUsd"])
        claim = self._open_claim(
            tx,
            "chargeback",
            dec(tx["amountLocal"]) - dec(tx["refundedLocal"]),
            amount_usd,
            "chargeback",
            now,
        )
        from_settlement, from_available = self._draw(tx, amount_usd, now)
        # Not zero only when the payment has its settlement instant (`_draw`); nothing is held
        # at the `now` default.
        settles_at = tx.get("availableAt", now)
        self._hold(tx, claim, "chargeback_hold", from_settlement, now, effective_at=settles_at)
        self._hold(tx, claim, "chargeback_hold", from_available, now, effective_at=now)
        # What could not be frozen now is taken from `available` when the dispute is lost.
        claim["heldUsd"] = str(from_settlement + from_available)
        ctx.claims.put(claim["id"], claim)
        ctx.coverage.reach("claim.chargeback", tx)
        tx.update({"chargebackClaimId": claim["id"], "updatedAt": now})
        ctx.transactions.save(tx)
        ctx.jobs.schedule("claim.resolve", now + CHARGEBACK_RESOLVE_AFTER, {"claimId": claim["id"]})
        return claim

    def resolve(self, claim_id: str) -> None:
        ctx = self.ctx
        claim = ctx.claims.get(claim_id)
        if claim is None or claim["status"] != "pending":
            return
        now = ctx.now()
        scope = (claim["merchantId"], claim["environment"])
        ids = {"transaction_id": claim["transactionId"], "claim_id": claim_id}
        held = dec(claim["amountUsd"]) if claim["kind"] == "refund" else dec(claim["heldUsd"])
        if held:
            ctx.ledger.record(
                scope, f"{claim['kind']}_paid", -held, FROZEN, effective_at=now, now=now, **ids
            )
        if claim["kind"] == "chargeback":
            merchant = ctx.catalog.merchants[claim["merchantId"]]
            owed = dec(claim["amountUsd"]) - held  # the part that could not be frozen
            fee = merchant.chargeback_fee_usd
            available = max(ctx.ledger.available(scope, now), ZERO)
            paid = min(owed, available)
            fee_paid = min(fee, available - paid)
            if paid:
                ctx.ledger.record(
                    scope, "chargeback_paid", -paid, AVAILABLE, effective_at=now, now=now, **ids
                )
            if fee_paid:
                ctx.ledger.record(
                    scope, "chargeback_fee", -fee_paid, AVAILABLE, effective_at=now, now=now, **ids
                )
            if paid < owed or fee_paid < fee:
                ctx.ledger.record(
                    scope, "uncovered_chargeback", ZERO, AVAILABLE, effective_at=now, now=now, **ids
                )
        claim = {
            **claim,
            "status": "resolved",
            "resolution": "refunded" if claim["kind"] == "refund" else "merchant_lost",
            "resolvedAt": now,
        }
        ctx.claims.put(claim_id, claim)
        ctx.coverage.reach(f"claim.resolve_{claim['kind']}", claim)
        ctx.trace.record(
            {**claim, "id": claim["transactionId"]},
            "claim_resolved",
            claimId=claim_id,
            claimKind=claim["kind"],
            resolution=claim["resolution"],
        )
        self.emit.claim(claim, "claim.resolved")

    def get_claim(self, principal: Principal, claim_id: str) -> ClaimRecord:
        claim = self.ctx.claims.get(claim_id)
        if claim is None or not principal.can_see(claim):
            raise ApiError("claim_not_found", f"No claim {claim_id}.", param="id")
        return claim


def _checked_reason(body: dict[str, Any]) -> str | None:
    """The body's `reason`, once its fields are known good (only `amount` and a `reason` of at
    most MAX_REASON characters)."""
    unknown = sorted(set(body) - {"amount", "reason"})
    reason = body.get("reason")
    issues = [{"path": key, "message": "unknown field"} for key in unknown]
    if reason is not None and not isinstance(reason, str):
        issues.append({"path": "reason", "message": "must be a string"})
    elif isinstance(reason, str) and len(reason) > MAX_REASON:
        issues.append({"path": "reason", "message": f"at most {MAX_REASON} characters"})
    if issues:
        raise issues_error(issues)
    return reason
