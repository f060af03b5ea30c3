"""Settlement batches: how `settlement.closed` and `settlement.pdf_ready` happen (decisions.md).

A completed payment's funds become available after its settlement delay (`availableAt`, T+N).
At 00:00 UTC of simulated time, the payments whose funds became available during the day that
just ended are closed into one settlement (`STL-...`) per merchant and environment, and
`settlement.closed` fires; `settlement.pdf_ready` follows five simulated minutes later.

A settlement is a statement, not a money movement: the ledger already moved those funds into
`available` at `availableAt`, and they stay there until the merchant withdraws them (see
withdrawals.py). The crypto payout the spec mentions is shown as `payout.status` `started`.
Days without settled payments produce no settlement and no job: the close job of a day is
scheduled by the first payment that settles in it (a `payment.completed` listener).

What a payment writes is bounded, however many settle that day (issue 23): the first one files
a small document for the day (`settlement_days`: merchant, environment, day), and each one files
its own entry (`settlement_entries`, keyed by transaction id: its day and its place in the day's
order). An index beside the store (day -> its payments) is built from the entries at start-up
and follows failed batches; the settlement's list is put together when the day closes, and the
day's documents are deleted with the same write. A day document written by an earlier version
still lists its payments (`transactionIds`): it is read as it is at the close, and moved into
entries when a payment is filed under it (in that payment's write), so no payment rewrites it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal

from simulator.clock import isoformat
from simulator.domain.catalog import Catalog
from simulator.domain.ids import new_id
from simulator.domain.money import ZERO, dec
from simulator.domain.ports import Events, Jobs, Table
from simulator.domain.transactions import TransactionRepository

if TYPE_CHECKING:
    from simulator.domain.records import (
        EventRecord,
        SettlementDayRecord,
        SettlementEntryRecord,
        SettlementRecord,
    )

DAY = 86_400.0
PDF_AFTER_SECONDS = 300.0
CLOSE_JOB = "settlement.close"
PDF_JOB = "settlement.pdf"


def day_of(moment: float) -> int:
    return math.floor(moment / DAY)


class SettlementService:
    def __init__(
        self,
        days: Table[SettlementDayRecord],
        entries: Table[SettlementEntryRecord],
        settlements: Table[SettlementRecord],
        transactions: TransactionRepository,
        catalog: Catalog,
        jobs: Jobs,
        events: Events,
        now: Callable[[], float],
        rng: random.Random,
    ) -> None:
        self._days = days  # one doc per (merchant, environment, UTC day) still open
        self._entries = entries  # one doc per payment filed under an open day
        # Day id -> {transaction id: its place in the day's order}, from the entries.
        self._members: dict[str, dict[str, int]] = {}
        self._next_place = 0  # above every stored place: places only grow
        self._settlements = settlements
        self._transactions = transactions
        self._catalog = catalog
        self._jobs = jobs
        self._events = events
        self._now = now
        self._rng = rng
        for entry in self._entries.scan():
            self._remember(entry["transactionId"], entry)

    def _remember(self, tx_id: str, entry: SettlementEntryRecord) -> None:
        self._members.setdefault(entry["dayId"], {})[tx_id] = entry["place"]
        self._next_place = max(self._next_place, entry["place"] + 1)

    def follow_rollback(self, tx_id: str, restored: SettlementEntryRecord | None) -> None:
        """Follow the store when a failed batch undoes a write of an entry (the entries table's
        `on_rollback`): a filing undone, or a close's deletion undone."""
        if restored is not None:
            self._remember(tx_id, restored)
            return
        for members in self._members.values():
            members.pop(tx_id, None)

    def _file(self, day_id: str, tx_id: str) -> None:
        entry: SettlementEntryRecord = {
            "transactionId": tx_id,
            "dayId": day_id,
            "place": self._next_place,
        }
        self._entries.put(tx_id, entry)
        self._remember(tx_id, entry)

    def on_event(self, event: EventRecord) -> None:
        """Bus listener: file each completed payment under the day its funds become available."""
        if event["type"] != "payment.completed":
            return
        tx = self._transactions.get(event["data"]["id"])
        if tx is None or tx.get("availableAt") is None:
            return
        day = day_of(tx["availableAt"])
        day_id = f"{tx['merchantId']}:{tx['environment']}:{day}"
        if tx["id"] in self._members.get(day_id, ()):
            return
        doc = self._days.get(day_id)
        if doc is None:
            doc = {
                "id": day_id,
                "merchantId": tx["merchantId"],
                "environment": tx["environment"],
                "day": day,
            }
            self._days.put(day_id, doc)
            self._jobs.schedule(CLOSE_JOB, (day + 1) * DAY, {"dayId": day_id})
        elif "transactionIds" in doc:
            self._migrate(doc)
            if tx["id"] in self._members.get(day_id, ()):
                return
        self._file(day_id, tx["id"])

    def _migrate(self, doc: SettlementDayRecord) -> None:
        """A day document of an earlier version: its list becomes entries and it loses the list,
        once, in the write of the payment that touches it."""
        listed = doc.pop("transactionIds", [])
        for tx_id in dict.fromkeys(listed):
            if tx_id not in self._members.get(doc["id"], ()):
                self._file(doc["id"], tx_id)
        self._days.put(doc["id"], doc)

    def close(self, payload: dict[str, Any]) -> SettlementRecord | None:
        """Job at 00:00 UTC: close the day into a settlement and fire `settlement.closed`."""
        doc = self._days.get(payload["dayId"])
        if doc is None:
            return None
        self._days.delete(doc["id"])
        members = self._members.pop(doc["id"], {})
        for tx_id in members:
            self._entries.delete(tx_id)
        filed = sorted(members, key=members.__getitem__)
        listed = dict.fromkeys([*doc.get("transactionIds", ()), *filed])  # an earlier version's
        txs = [tx for tid in listed if (tx := self._transactions.get(tid))]
        if not txs:
            return None
        gross = sum((dec(tx["amount"]) for tx in txs), ZERO)
        fees = sum((dec(tx["fees"]["total"]) for tx in txs), ZERO)
        reserve = sum((dec(tx.get("reserve", "0")) for tx in txs), ZERO)
        merchant = self._catalog.merchants[doc["merchantId"]]
        now = self._now()
        settlement: SettlementRecord = {
            "id": new_id(self._rng, "STL-"),
            "merchantId": doc["merchantId"],
            "environment": doc["environment"],
            "status": "closed",
            "periodStart": doc["day"] * DAY,
            "periodEnd": (doc["day"] + 1) * DAY,
            "transactionIds": [tx["id"] for tx in txs],
            "grossAmount": str(gross),
            "fees": str(fees),
            "reserve": str(reserve),
            "netAmount": str(gross - fees - reserve),
            "payoutAsset": merchant.crypto[0] if merchant.crypto else "USDT",
            "closedAt": now,
            "pdfReadyAt": None,
        }
        self._settlements.put(settlement["id"], settlement)
        self._jobs.schedule(PDF_JOB, now + PDF_AFTER_SECONDS, {"settlementId": settlement["id"]})
        self._emit(settlement, "settlement.closed")
        return settlement

    def pdf_ready(self, payload: dict[str, Any]) -> None:
        settlement = self._settlements.get(payload["settlementId"])
        if settlement is None or settlement.get("pdfReadyAt") is not None:
            return
        settlement["pdfReadyAt"] = self._now()
        self._settlements.put(settlement["id"], settlement)
        self._emit(settlement, "settlement.pdf_ready")

    def _emit(self, settlement: SettlementRecord, event_type: str) -> None:
        self._events.emit(
            settlement["merchantId"],
            settlement["environment"],
            event_type,
            settlement_view(settlement),
        )

    def job_handlers(self) -> dict[str, Callable[[dict[str, Any]], Any]]:
        return {CLOSE_JOB: self.close, PDF_JOB: self.pdf_ready}


def settlement_view(settlement: SettlementRecord) -> dict[str, Any]:
    def money(key: Literal["grossAmount", "fees", "reserve", "netAmount"]) -> Decimal:
        return dec(settlement[key])

    ready = settlement.get("pdfReadyAt")
    return {
        "id": settlement["id"],
        "status": settlement["status"],
        "currency": "USD",
        "periodStart": isoformat(settlement["periodStart"]),
        "periodEnd": isoformat(settlement["periodEnd"]),
        "transactionCount": len(settlement["transactionIds"]),
        "transactionIds": list(settlement["transactionIds"]),
        "grossAmount": money("grossAmount"),
        "fees": money("fees"),
        "reserve": money("reserve"),
        "netAmount": money("netAmount"),
        "payout": {"asset": settlement["payoutAsset"], "status": "started"},
        "closedAt": isoformat(settlement["closedAt"]),
        "pdfReady": ready is not None,
        "pdfReadyAt": isoformat(ready) if ready is not None else None,
    }
