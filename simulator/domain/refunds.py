"""Refunds and chargebacks: both are claims (`CLM-...`) that hold money in `frozen` while open.

Decisions (docs/decisions.md): a refund claim starts `pending`, holds its USD value out of
`available` at once and resolves (`resolved`/`refunded`) one simulated hour later, when the held
money leaves. A chargeback claim freezes the transaction's USD amount (as much as is available) and
resolves after 7 simulated days as `merchant_lost`, charging the tier's chargeback fee.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

from simulator.domain.auth import Principal
from simulator.domain.context import DomainContext
from simulator.domain.errors import ApiError
from simulator.domain.ids import new_id
from simulator.domain.ledger import AVAILABLE, FROZEN
from simulator.domain.money import ZERO, dec, parse_amount, round_to, usd
from simulator.domain.views import claim_view

if TYPE_CHECKING:
    from simulator.domain.payments import PaymentService

MAX_REASON = 500
CLAIM_RESOLVE_AFTER = 3600.0
CHARGEBACK_RESOLVE_AFTER = 7 * 86_400.0


class RefundService:
    def __init__(self, ctx: DomainContext, payments: PaymentService) -> None:
        self.ctx = ctx
        self.payments = payments

    def _remaining(self, tx: dict[str, Any]) -> tuple[Decimal, Decimal]:
        """(local, USD) still refundable."""
        return (
            dec(tx["amountLocal"]) - dec(tx["refundedLocal"]),
            dec(tx["amount"]) - dec(tx["refundedUsd"]),
        )

    def _usd_share(self, tx: dict[str, Any], amount_local: Decimal) -> Decimal:
        remaining_local, remaining_usd = self._remaining(tx)
        if amount_local == remaining_local:
            return remaining_usd  # no rounding dust left behind on the last refund
        return usd(amount_local / dec(tx["amountLocal"]) * dec(tx["amount"]))

    def refund(self, principal: Principal, transaction_id: str, body: dict[str, Any]) -> dict:
        ctx = self.ctx
        tx = self.payments.get(principal, transaction_id)
        unknown = sorted(set(body) - {"amount", "reason"})
        reason = body.get("reason")
        issues = [{"path": key, "message": "unknown field"} for key in unknown]
        if reason is not None and not isinstance(reason, str):
            issues.append({"path": "reason", "message": "must be a string"})
        elif isinstance(reason, str) and len(reason) > MAX_REASON:
            issues.append({"path": "reason", "message": f"at most {MAX_REASON} characters"})
        if issues:
            raise ApiError(
                "invalid_request",
                "; ".join(f"{i['path']}: {i['message']}" for i in issues),
                param=issues[0]["path"],
                details={"issues": issues},
            )
        if tx["status"] not in ("completed", "refunded"):
            raise ApiError(
                "invalid_request",
                f"Transaction {tx['id']} is {tx['status']}; only completed payments can be "
                "refunded.",
                param="id",
                details={"status": tx["status"]},
            )
        currency = tx["currencyLocal"]
        decimals = ctx.fx.decimals(currency)
        remaining_local, _ = self._remaining(tx)
        if body.get("amount") is None:
            amount = remaining_local
        else:
            amount = parse_amount(body["amount"])
            if round_to(amount, decimals) != amount:
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
        amount_usd = self._usd_share(tx, amount)
        now = ctx.now()
        available = ctx.ledger.available(principal.scope, now)
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
        claim = self._open_claim(tx, "refund", amount, amount_usd, reason or None, now)
        scope = principal.scope
        ctx.ledger.record(
            scope,
            "refund_hold",
            -amount_usd,
            AVAILABLE,
            effective_at=now,
            now=now,
            transaction_id=tx["id"],
            claim_id=claim["id"],
        )
        ctx.ledger.record(
            scope,
            "refund_hold",
            amount_usd,
            FROZEN,
            effective_at=now,
            now=now,
            transaction_id=tx["id"],
            claim_id=claim["id"],
        )
        self._mark_refunded(tx, amount, amount_usd, now)
        ctx.jobs.schedule("claim.resolve", now + CLAIM_RESOLVE_AFTER, {"claimId": claim["id"]})
        self._emit_claim(claim, "claim.opened")
        self.payments._emit(tx, "payment.refunded")
        return claim

    def _open_claim(
        self,
        tx: dict[str, Any],
        kind: str,
        amount: Decimal,
        amount_usd: Decimal,
        reason: str | None,
        now: float,
    ) -> dict[str, Any]:
        claim = {
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
        self, tx: dict[str, Any], amount: Decimal, amount_usd: Decimal, now: float
    ) -> None:
        tx["refundedLocal"] = str(dec(tx["refundedLocal"]) + amount)
        tx["refundedUsd"] = str(dec(tx["refundedUsd"]) + amount_usd)
        tx["updatedAt"] = now
        if dec(tx["refundedLocal"]) >= dec(tx["amountLocal"]):
            tx["status"] = "refunded"
            tx["refundedAt"] = now
        self.ctx.transactions.save(tx)

    def record_provider_refund(self, tx: dict[str, Any]) -> None:
        """The provider refunded the whole remainder: debit what the balance can give."""
        ctx = self.ctx
        now = ctx.now()
        remaining_local, remaining_usd = self._remaining(tx)
        scope = (tx["merchantId"], tx["environment"])
        debit = min(remaining_usd, max(ctx.ledger.available(scope, now), ZERO))
        if debit:
            ctx.ledger.record(
                scope,
                "refund",
                -debit,
                AVAILABLE,
                effective_at=now,
                now=now,
                transaction_id=tx["id"],
            )
        if debit < remaining_usd:
            ctx.ledger.record(
                scope,
                "uncovered_refund",
                ZERO,
                AVAILABLE,
                effective_at=now,
                now=now,
                transaction_id=tx["id"],
            )
            tx["uncoveredUsd"] = str(remaining_usd - debit)
        self._mark_refunded(tx, remaining_local, remaining_usd, now)
        tx["status"] = "refunded"
        tx.setdefault("refundedAt", now)
        ctx.transactions.save(tx)
        self.payments._emit(tx, "payment.refunded")

    def open_chargeback(self, tx: dict[str, Any]) -> dict[str, Any]:
        ctx = self.ctx
        now = ctx.now()
        scope = (tx["merchantId"], tx["environment"])
        amount_usd = dec(tx["amount"]) - dec(tx["refundedUsd"])
        claim = self._open_claim(
            tx,
            "chargeback",
            dec(tx["amountLocal"]) - dec(tx["refundedLocal"]),
            amount_usd,
            "chargeback",
            now,
        )
        held = min(amount_usd, max(ctx.ledger.available(scope, now), ZERO))
        if held:
            ctx.ledger.record(
                scope,
                "chargeback_hold",
                -held,
                AVAILABLE,
                effective_at=now,
                now=now,
                transaction_id=tx["id"],
                claim_id=claim["id"],
            )
            ctx.ledger.record(
                scope,
                "chargeback_hold",
                held,
                FROZEN,
                effective_at=now,
                now=now,
                transaction_id=tx["id"],
                claim_id=claim["id"],
            )
        if held < amount_usd:
            ctx.ledger.record(
                scope,
                "uncovered_chargeback",
                ZERO,
                AVAILABLE,
                effective_at=now,
                now=now,
                transaction_id=tx["id"],
                claim_id=claim["id"],
            )
        claim["heldUsd"] = str(held)
        ctx.claims.put(claim["id"], claim)
        tx.update(chargebackClaimId=claim["id"], updatedAt=now)
        ctx.transactions.save(tx)
        ctx.jobs.schedule("claim.resolve", now + CHARGEBACK_RESOLVE_AFTER, {"claimId": claim["id"]})
        self.payments._emit(tx, "chargeback.created")
        self._emit_claim(claim, "claim.opened")
        return claim

    def resolve(self, claim_id: str) -> None:
        ctx = self.ctx
        claim = ctx.claims.get(claim_id)
        if claim is None or claim["status"] != "pending":
            return
        now = ctx.now()
        scope = (claim["merchantId"], claim["environment"])
        held = dec(claim["amountUsd"]) if claim["kind"] == "refund" else dec(claim["heldUsd"])
        if held:
            ctx.ledger.record(
                scope,
                f"{claim['kind']}_paid",
                -held,
                FROZEN,
                effective_at=now,
                now=now,
                transaction_id=claim["transactionId"],
                claim_id=claim_id,
            )
        if claim["kind"] == "chargeback":
            merchant = ctx.catalog.merchants[claim["merchantId"]]
            fee = min(merchant.chargeback_fee_usd, max(ctx.ledger.available(scope, now), ZERO))
            if fee:
                ctx.ledger.record(
                    scope,
                    "chargeback_fee",
                    -fee,
                    AVAILABLE,
                    effective_at=now,
                    now=now,
                    transaction_id=claim["transactionId"],
                    claim_id=claim_id,
                )
        claim = {
            **claim,
            "status": "resolved",
            "resolution": "refunded" if claim["kind"] == "refund" else "merchant_lost",
            "resolvedAt": now,
        }
        ctx.claims.put(claim_id, claim)
        self._emit_claim(claim, "claim.resolved")

    def _emit_claim(self, claim: dict[str, Any], event_type: str) -> None:
        self.ctx.events.emit(
            claim["merchantId"], claim["environment"], event_type, claim_view(claim)
        )

    def get_claim(self, principal: Principal, claim_id: str) -> dict[str, Any]:
        claim = self.ctx.claims.get(claim_id)
        if (
            claim is None
            or claim["merchantId"] != principal.merchant.id
            or claim["environment"] != principal.environment
            or (principal.shop is not None and claim["shopId"] != principal.shop.id)
        ):
            raise ApiError("claim_not_found", f"No claim {claim_id}.", param="id")
        return claim
