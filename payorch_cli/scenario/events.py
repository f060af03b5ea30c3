"""The spec's event names, in its table's order; imported by `payorch trigger` at start-up, so
this module imports nothing."""

from __future__ import annotations

EVENT_TYPES: tuple[str, ...] = (
    "payment.completed",
    "payment.failed",
    "payment.refunded",
    "chargeback.created",
    "claim.opened",
    "claim.resolved",
    "settlement.closed",
    "settlement.pdf_ready",
    "withdrawal.completed",
    "withdrawal.failed",
    "payout.completed",
    "payout.failed",
    "payment.captured",
)
