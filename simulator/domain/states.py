"""The spec's transition tables as data, with one legal-move check.

`PaymentService.apply` drives every transition of the spec's simulate table from this table (the
simulate endpoint, Sandbox-Simulate, provider callbacks and pages, the reconciliation poll, the
deadline): the status it requires and reaches, and the events it fires, in order. Nothing else
lists them. A merchant's refund (`RefundService.refund`, POST /payments/{id}/refund) is not one
of them: it fires claim.opened and payment.refunded on every refund, partial ones too, and moves
the payment to `refunded` only when nothing is left to refund.

`PAYOUT_SIMULATE_ACTIONS` is the payouts' table, in the same form: `PayoutService` drives simulate
and its provider's callbacks from it (a failure's `failureReason` is the row's)."""

from __future__ import annotations

from dataclasses import dataclass

from payorch.vocabulary import TRANSACTION_STATUSES
from simulator.domain.errors import ApiError, unknown_action

__all__ = [
    "PAYOUT_SIMULATE_ACTIONS",
    "SIMULATE_ACTIONS",
    "TRANSACTION_STATUSES",
    "Transition",
    "check_simulate",
    "payout_transition",
]


@dataclass(frozen=True, slots=True)
class Transition:
    requires: str
    becomes: str
    # As the sandbox simulator fires them (simulate endpoint, Sandbox-Simulate, provider page).
    events: tuple[str, ...]
    # As a provider's callback or the reconciliation poll fires them, where they differ.
    provider_events: tuple[str, ...] | None = None
    # The `failureReason` a payout failure reports (payouts' table only).
    failure_reason: str | None = None

    def events_for(self, *, simulator: bool) -> tuple[str, ...]:
        if simulator or self.provider_events is None:
            return self.events
        return self.provider_events


# The pay-in transitions by simulate action (the spec's simulate table).
SIMULATE_ACTIONS: dict[str, Transition] = {
    "paid": Transition(
        "pending",
        "completed",
        ("payment.completed", "payment.captured"),
        provider_events=("payment.completed",),
    ),
    "failed": Transition("pending", "failed", ("payment.failed",)),
    "expired": Transition("pending", "expired", ("payment.failed",)),
    "refunded": Transition("completed", "refunded", ("payment.refunded",)),
    "chargeback": Transition("completed", "completed", ("chargeback.created", "claim.opened")),
}

# The payout transitions by simulate action (POST /me/payout/send/{id}/simulate); a provider's
# callback reports one of these actions too. `processing` is the spec's no-op.
PAYOUT_SIMULATE_ACTIONS: dict[str, Transition] = {
    "completed": Transition("processing", "completed", ("payout.completed",)),
    "paid": Transition("processing", "completed", ("payout.completed",)),
    "failed": Transition(
        "processing", "failed", ("payout.failed",), failure_reason="provider_error"
    ),
    "rejected": Transition(
        "processing", "failed", ("payout.failed",), failure_reason="rejected_by_beneficiary_bank"
    ),
    "refunded": Transition(
        "processing", "failed", ("payout.failed",), failure_reason="refunded_by_provider"
    ),
    "returned": Transition(
        "processing", "failed", ("payout.failed",), failure_reason="returned_by_beneficiary_bank"
    ),
    "processing": Transition("processing", "processing", ()),
}

# Sandbox-Simulate header values (design.md 2.2).
SANDBOX_SIMULATE_VALUES = ("paid", "failed", "expired", "chargeback", "slow_payment")


def check_simulate(action: object, status: str, transaction_id: str) -> Transition:
    if not isinstance(action, str) or action not in SIMULATE_ACTIONS:
        raise unknown_action(SIMULATE_ACTIONS)
    transition = SIMULATE_ACTIONS[action]
    if status != transition.requires:
        raise ApiError(
            "invalid_request",
            f"Transaction {transaction_id} is {status}; `{action}` requires {transition.requires}.",
            param="action",
            details={"status": status, "requiredStatus": transition.requires, "action": action},
        )
    return transition


def payout_transition(action: object) -> Transition:
    """The payouts' table row of a simulate action (the payout's status is checked once it is
    found: an unknown action is refused before the lookup)."""
    if not isinstance(action, str) or action not in PAYOUT_SIMULATE_ACTIONS:
        raise unknown_action(PAYOUT_SIMULATE_ACTIONS)
    return PAYOUT_SIMULATE_ACTIONS[action]
