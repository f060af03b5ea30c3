"""The pay-in ledger: an append-only list of movements from which the balance is derived.

A movement is a signed USD amount in one bucket (available, reserve or frozen) that takes effect at
`effectiveAt` (simulated time). Until that moment it counts as pending, whatever its bucket: money
on its way (a payment, its fees, its reserve hold) or taken from it before it lands (a refund or a
chargeback hold drawn on the payment's own settlement). The reserve release is a future move
between buckets whose two legs cancel out in pending. Nothing is ever updated in place, so
available + pending + frozen + reserve = the sum of all movements at any moment, and future-dated
movements (settlement delay, reserve release) need no scheduler job.

Future-dated debits are only ever recorded at the instant of a credit at least as large (the same
transaction's settlement), so no bucket is negative at any moment, now or later.
"""

from __future__ import annotations

import secrets
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from simulator.domain.money import ZERO, dec
from simulator.domain.ports import Table

AVAILABLE, RESERVE, FROZEN = "available", "reserve", "frozen"
MOVEMENTS_SHOWN = 100


@dataclass(slots=True)
class Balance:
    available: Decimal = ZERO
    pending: Decimal = ZERO
    frozen: Decimal = ZERO
    reserve: Decimal = ZERO
    gross_volume: Decimal = ZERO
    platform_fees: Decimal = ZERO
    flat_fees: Decimal = ZERO
    chargeback_fees: Decimal = ZERO
    refunds: Decimal = ZERO
    chargebacks: Decimal = ZERO
    reserve_schedule: list[dict[str, Any]] = field(default_factory=list)
    movements: list[dict[str, Any]] = field(default_factory=list)


class Ledger:
    def __init__(self, movements: Table) -> None:
        self._table = movements
        self._by_scope: dict[tuple[str, str], list[str]] = defaultdict(list)
        for movement in movements.values():
            self._by_scope[(movement["merchantId"], movement["environment"])].append(movement["id"])

    def record(
        self,
        scope: tuple[str, str],
        kind: str,
        amount: Decimal,
        bucket: str,
        *,
        effective_at: float,
        now: float,
        transaction_id: str | None = None,
        claim_id: str | None = None,
    ) -> dict[str, Any]:
        movement_id = f"mv_{secrets.token_hex(8)}"
        movement = {
            "id": movement_id,
            "merchantId": scope[0],
            "environment": scope[1],
            "type": kind,
            "amount": str(amount),
            "bucket": bucket,
            "effectiveAt": effective_at,
            "createdAt": now,
            "transactionId": transaction_id,
            "claimId": claim_id,
        }
        self._table.put(movement_id, movement)
        self._by_scope[scope].append(movement_id)
        return movement

    def movements(self, scope: tuple[str, str]) -> list[dict[str, Any]]:
        table = self._table
        return [m for mid in self._by_scope.get(scope, ()) if (m := table.get(mid)) is not None]

    def balance(self, scope: tuple[str, str], now: float) -> Balance:
        result = Balance()
        for movement in self.movements(scope):
            amount = dec(movement["amount"])
            kind, bucket = movement["type"], movement["bucket"]
            if movement["effectiveAt"] <= now:
                if bucket == AVAILABLE:
                    result.available += amount
                elif bucket == RESERVE:
                    result.reserve += amount
                else:
                    result.frozen += amount
            else:
                # Not landed yet: pending. Counting every bucket (not only available) keeps a
                # settling payment's reserve hold in pending instead of nowhere.
                result.pending += amount
                if kind == "reserve_release" and bucket == AVAILABLE:
                    result.reserve_schedule.append(
                        {"amount": amount, "releaseAt": movement["effectiveAt"]}
                    )
            if kind == "payment":
                result.gross_volume += amount
            elif kind == "fee_platform":
                result.platform_fees -= amount
            elif kind == "fee_processing":
                result.flat_fees -= amount
            elif kind == "chargeback_fee":
                result.chargeback_fees -= amount
            elif kind in ("refund", "refund_hold") and bucket == AVAILABLE:
                result.refunds -= amount
            elif kind == "chargeback_paid":
                result.chargebacks -= amount
        result.reserve_schedule.sort(key=lambda item: item["releaseAt"])
        return result

    def available(self, scope: tuple[str, str], now: float) -> Decimal:
        total = ZERO
        for movement in self.movements(scope):
            if movement["bucket"] == AVAILABLE and movement["effectiveAt"] <= now:
                total += dec(movement["amount"])
        return total

    def settling(self, scope: tuple[str, str], transaction_id: str, at: float) -> Decimal:
        """What the transaction still brings to `available` at its settlement instant `at`.

        Refunds and chargebacks of a payment whose money has not landed yet draw on this first:
        a debit dated `at` and no larger than this can never take `available` below zero.
        """
        total = ZERO
        for movement in self.movements(scope):
            if (
                movement["transactionId"] == transaction_id
                and movement["bucket"] == AVAILABLE
                and movement["effectiveAt"] == at
            ):
                total += dec(movement["amount"])
        return max(total, ZERO)
