"""The spec's transition tables as data, with one legal-move check."""

from __future__ import annotations

from payorch.vocabulary import TRANSACTION_STATUSES
from simulator.domain.errors import ApiError, unknown_action

__all__ = ["TRANSACTION_STATUSES", "check_simulate"]


# simulate action -> (required status, resulting status, events fired)
SIMULATE_ACTIONS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "paid": ("pending", "completed", ("payment.completed", "payment.captured")),
    "failed": ("pending", "failed", ("payment.failed",)),
    "expired": ("pending", "expired", ("payment.failed",)),
    "refunded": ("completed", "refunded", ("payment.refunded",)),
    "chargeback": ("completed", "completed", ("chargeback.created", "claim.opened")),
}

# Sandbox-Simulate header values (design.md 2.2).
SANDBOX_SIMULATE_VALUES = ("paid", "failed", "expired", "chargeback", "slow_payment")


def check_simulate(action: object, status: str, transaction_id: str) -> tuple[str, tuple[str, ...]]:
    if not isinstance(action, str) or action not in SIMULATE_ACTIONS:
        raise unknown_action(SIMULATE_ACTIONS)
    required, target, events = SIMULATE_ACTIONS[action]
    if status != required:
        raise ApiError(
            "invalid_request",
            f"Transaction {transaction_id} is {status}; `{action}` requires {required}.",
            param="action",
            details={"status": status, "requiredStatus": required, "action": action},
        )
    return target, events
