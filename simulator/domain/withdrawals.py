"""Merchant withdrawals: how `withdrawal.completed` and `withdrawal.failed` happen (decisions.md).

The spec has no withdrawal endpoint, so the control plane offers one: `POST /_sim/withdrawals
{amount, outcome?}`. The amount plus the merchant's `withdrawalFeeUsd` leave `available` at once
(never more than is available, so the balance cannot go negative); 60 simulated seconds later
the bank answers with `outcome` (default `completed`; `failed` returns both to `available`).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from simulator.clock import isoformat
from simulator.domain.auth import Principal
from simulator.domain.errors import ApiError
from simulator.domain.ids import new_id
from simulator.domain.ledger import AVAILABLE, Ledger
from simulator.domain.money import dec, has_decimals_at_most, parse_amount
from simulator.domain.ports import Events, Jobs, Table

if TYPE_CHECKING:
    from simulator.domain.records import WithdrawalRecord

SETTLES_AFTER_SECONDS = 60.0
OUTCOMES = ("completed", "failed")
FIELDS = frozenset({"amount", "outcome"})
JOB = "withdrawal.settle"
FAILURE_REASON = "rejected_by_bank"


class WithdrawalService:
    def __init__(
        self,
        table: Table[WithdrawalRecord],
        ledger: Ledger,
        jobs: Jobs,
        events: Events,
        now: Callable[[], float],
        rng: random.Random,
    ) -> None:
        self._table = table
        self._ledger = ledger
        self._jobs = jobs
        self._events = events
        self._now = now
        self._rng = rng

    def request(self, principal: Principal, body: dict[str, Any]) -> WithdrawalRecord:
        unknown = sorted(set(body) - FIELDS)
        if unknown:
            raise ApiError(
                "invalid_request",
                f"Unknown field(s): {', '.join(unknown)}.",
                param=unknown[0],
                details={"issues": [{"path": k, "message": "unknown field"} for k in unknown]},
            )
        if "amount" not in body:
            raise ApiError("missing_field", "`amount` (USD) is required.", param="amount")
        amount = parse_amount(body["amount"])
        if not has_decimals_at_most(amount, 2):
            raise ApiError("amount_invalid", "USD amounts have 2 decimals at most.", param="amount")
        outcome = body.get("outcome")
        if outcome is None:  # null is absent
            outcome = "completed"
        if outcome not in OUTCOMES:
            raise ApiError(
                "invalid_request",
                f"`outcome` must be one of {', '.join(OUTCOMES)}.",
                param="outcome",
                details={"issues": [{"path": "outcome", "message": "completed or failed"}]},
            )
        now = self._now()
        scope = principal.scope
        fee = principal.merchant.withdrawal_fee_usd
        available = self._ledger.available(scope, now)
        if amount + fee > available:
            raise ApiError(
                "balance_insufficient",
                f"Withdrawing {amount} USD costs {amount + fee} USD with the {fee} USD fee; "
                f"the available balance is {available} USD.",
                param="amount",
                details={
                    "availableUsd": available,
                    "feeUsd": fee,
                    "shortfallUsd": amount + fee - available,
                },
            )
        withdrawal: WithdrawalRecord = {
            "id": new_id(self._rng, "WDR-"),
            "merchantId": scope[0],
            "environment": scope[1],
            "status": "processing",
            "amount": str(amount),
            "fee": str(fee),
            "outcome": outcome,
            "failureReason": None,
            "createdAt": now,
            "completedAt": None,
            "failedAt": None,
        }
        self._move(withdrawal, ("withdrawal", "withdrawal_fee"), -1)
        self._table.put(withdrawal["id"], withdrawal)
        self._jobs.schedule(JOB, now + SETTLES_AFTER_SECONDS, {"withdrawalId": withdrawal["id"]})
        return withdrawal

    def settle(self, payload: dict[str, Any]) -> None:
        """Job: the bank's answer. A failure gives the amount and the fee back."""
        withdrawal = self._table.get(payload["withdrawalId"])
        if withdrawal is None or withdrawal["status"] != "processing":
            return
        now = self._now()
        if withdrawal["outcome"] == "completed":
            withdrawal.update({"status": "completed", "completedAt": now})
        else:
            self._move(withdrawal, ("withdrawal_reversal", "withdrawal_fee_reversal"), +1)
            withdrawal.update(
                {"status": "failed", "failedAt": now, "failureReason": FAILURE_REASON}
            )
        self._table.put(withdrawal["id"], withdrawal)
        self._events.emit(
            withdrawal["merchantId"],
            withdrawal["environment"],
            f"withdrawal.{withdrawal['status']}",
            withdrawal_view(withdrawal),
        )

    def get(self, principal: Principal, withdrawal_id: str) -> WithdrawalRecord:
        withdrawal = self._table.get(withdrawal_id)
        if (
            withdrawal is None
            or (
                withdrawal["merchantId"],
                withdrawal["environment"],
            )
            != principal.scope
        ):
            raise ApiError("withdrawal_not_found", f"No withdrawal {withdrawal_id}.", param="id")
        return withdrawal

    def _move(self, withdrawal: WithdrawalRecord, kinds: tuple[str, str], sign: int) -> None:
        now = self._now()
        scope = (withdrawal["merchantId"], withdrawal["environment"])
        for kind, stored in zip(kinds, (withdrawal["amount"], withdrawal["fee"]), strict=True):
            value = dec(stored)
            if value:
                self._ledger.record(
                    scope,
                    kind,
                    sign * value,
                    AVAILABLE,
                    effective_at=now,
                    now=now,
                )


def withdrawal_view(withdrawal: WithdrawalRecord) -> dict[str, Any]:
    def at(key: Literal["createdAt", "completedAt", "failedAt"]) -> str | None:
        return isoformat(moment) if (moment := withdrawal.get(key)) is not None else None

    return {
        "id": withdrawal["id"],
        "status": withdrawal["status"],
        "amount": dec(withdrawal["amount"]),
        "fee": dec(withdrawal["fee"]),
        "currency": "USD",
        "failureReason": withdrawal.get("failureReason"),
        "createdAt": at("createdAt"),
        "completedAt": at("completedAt"),
        "failedAt": at("failedAt"),
    }
