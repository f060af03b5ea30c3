"""The spec's event names, in its table's order: the one list the simulator (subscriptions) and the
CLI (`payorch trigger`, scenarios) share. It imports nothing, so the CLI's start stays cheap."""

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
