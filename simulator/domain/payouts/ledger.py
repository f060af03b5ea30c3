"""The payout ledger: append-only movements per (merchant, environment, currency), from which the
payout balance is derived, the same way the pay-in ledger derives the pay-in balance.

Buckets:
- `available`: spendable now (fund-sandbox, transfer from pay-in, swaps, reversals add; a payout
  debit takes from it);
- `reserved`: debited by a payout still `processing`; it leaves when the payout completes and goes
  back to `available` when it fails (the reversal);
- `pending`: credits dated in the future (`effectiveAt` > now). Every credit the API makes today
  is immediate, so it stays 0 until a delayed credit exists; it is derived, never stored.

Nothing is updated in place, so each bucket is the sum of its movements at any moment. Callers
check `available` and record the debit with no `await` in between (one event loop), which is what
keeps the balance from going negative under concurrent sends.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from simulator.domain.auth import Scope
from simulator.domain.ids import hex_token, unused
from simulator.domain.money import ZERO, dec
from simulator.domain.ports import Table

if TYPE_CHECKING:
    from simulator.domain.records import PayoutMovementRecord

AVAILABLE, RESERVED = "available", "reserved"
BUCKETS = (AVAILABLE, RESERVED)


@dataclass(slots=True)
class CurrencyBalance:
    currency: str
    available: Decimal = ZERO
    pending: Decimal = ZERO
    reserved: Decimal = ZERO

    def as_json(self) -> dict[str, Any]:
        return {
            "currency": self.currency,
            "available": self.available,
            "pending": self.pending,
            "reserved": self.reserved,
        }


def sort_currencies(currencies: set[str] | list[str]) -> list[str]:
    """Alphabetical with USD first: the settlement currency heads every payout listing."""
    return sorted(set(currencies), key=lambda code: (code != "USD", code))


class PayoutLedger:
    def __init__(
        self, movements: Table[PayoutMovementRecord], rng: random.Random | None = None
    ) -> None:
        self._table = movements
        self._rng = rng
        self._by_scope: dict[Scope, list[str]] = defaultdict(list)
        for movement in movements.values():
            self._by_scope[(movement["merchantId"], movement["environment"])].append(movement["id"])

    def record(
        self,
        scope: Scope,
        currency: str,
        kind: str,
        amount: Decimal,
        bucket: str,
        *,
        now: float,
        effective_at: float | None = None,
        ref: str | None = None,
    ) -> PayoutMovementRecord:
        """One signed movement; `ref` names what caused it (payout, transfer or swap id)."""
        if bucket not in BUCKETS:
            raise ValueError(bucket)
        movement_id = unused(lambda: f"pmv_{hex_token(self._rng, 8)}", self._table.get)
        movement: PayoutMovementRecord = {
            "id": movement_id,
            "merchantId": scope[0],
            "environment": scope[1],
            "currency": currency,
            "type": kind,
            "amount": str(amount),
            "bucket": bucket,
            "effectiveAt": now if effective_at is None else effective_at,
            "createdAt": now,
            "ref": ref,
        }
        self._table.put(movement_id, movement)
        self._by_scope[scope].append(movement_id)
        return movement

    def movements(self, scope: Scope) -> list[PayoutMovementRecord]:
        table = self._table
        # A rolled-back batch leaves an id here without its document: skip it.
        return [m for mid in self._by_scope.get(scope, ()) if (m := table.get(mid)) is not None]

    def balances(self, scope: Scope, now: float) -> dict[str, CurrencyBalance]:
        """Every currency that has ever moved, with its three buckets at `now`."""
        result: dict[str, CurrencyBalance] = {}
        for movement in self.movements(scope):
            currency = movement["currency"]
            entry = result.get(currency) or result.setdefault(currency, CurrencyBalance(currency))
            amount = dec(movement["amount"])
            if movement["effectiveAt"] > now:
                if movement["bucket"] == AVAILABLE:
                    entry.pending += amount
            elif movement["bucket"] == AVAILABLE:
                entry.available += amount
            else:
                entry.reserved += amount
        return {code: result[code] for code in sort_currencies(list(result))}

    def available(self, scope: Scope, currency: str, now: float) -> Decimal:
        entry = self.balances(scope, now).get(currency)
        return entry.available if entry else ZERO
