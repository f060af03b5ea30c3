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

Reads cost what they show, not the merchant's history: each scope keeps running totals, built in
one pass at start and kept by `record` (and by `follow_rollback` when a failed store batch undoes a
movement). Per bucket, the total of what has landed by the scope's `mark` (the latest `now` a
read asked about); the movements still ahead of the mark, a heap by `effectiveAt`, which a read at
a later `now` folds into the landed totals (each movement once); and those that landed within
`RECENT` seconds before the mark, so that a read at an earlier `now` (a wall clock stepped back)
subtracts them again. A read earlier than that derives the balance from every movement, as
`derive` does: exact whatever `now` is, only slower.
"""

from __future__ import annotations

import random
from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from heapq import heappop, heappush
from itertools import count
from math import inf
from typing import TYPE_CHECKING, Any

from simulator.clock import isoformat
from simulator.domain.ids import hex_token, unused
from simulator.domain.money import ZERO, dec
from simulator.domain.ports import Table
from simulator.jsonio import to_json_number
from simulator.memory import BoundedCache

if TYPE_CHECKING:
    from simulator.domain.records import MovementRecord

AVAILABLE, RESERVE, FROZEN = "available", "reserve", "frozen"
MOVEMENTS_SHOWN = 100
# The reserve schedule lists the next 100 releases, as `movements` lists the newest 100: every paid
# payment has a release for its reserve days, and a busy shop's balance answered thousands (a
# GET /me/balance of megabytes, 5 ms of CPU after a bench's few thousand payments).
RESERVE_SCHEDULE_SHOWN = 100
# Movement types shown as ledger warnings rather than as movements (see account.py).
WARNING_TYPES = frozenset({"uncovered_refund", "uncovered_chargeback"})
# How far (simulated seconds) before its latest read a scope can still be read at no extra cost.
RECENT = 3600.0
# How many of the latest recorded movements a rollback can be followed for without a rebuild.
REMEMBERED = 4096


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
    # Each release still ahead, as GET /me/balance lists it (`schedule_item`).
    reserve_schedule: list[dict[str, Any]] = field(default_factory=list)
    movements: list[dict[str, Any]] = field(default_factory=list)


def schedule_item(amount: Decimal, release_at: float) -> dict[str, Any]:
    """A reserve release as the balance lists it, rendered once per release (the schedule lists
    every release still ahead: a payment's each, for the reserve days): the running totals
    keep it beside the release, so a read renders none. Shared by every read: never changed."""
    return {"amount": to_json_number(amount), "releaseAt": isoformat(release_at)}


def _tally(kind: str, bucket: str) -> tuple[str, int] | None:
    """The time-independent `Balance` total a movement counts in, and its sign there."""
    if kind == "payment":
        return "gross_volume", 1
    if kind == "fee_platform":
        return "platform_fees", -1
    if kind == "fee_processing":
        return "flat_fees", -1
    if kind == "chargeback_fee":
        return "chargeback_fees", -1
    if kind in ("refund", "refund_hold") and bucket == AVAILABLE:
        return "refunds", -1
    if kind == "chargeback_paid":
        return "chargebacks", -1
    return None


def derive(movements: Iterable[MovementRecord], now: float) -> Balance:
    """The balance at `now` from every movement of a scope, in record order (the reference)."""
    result = Balance()
    releases: list[tuple[float, Decimal]] = []
    for movement in movements:
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
                releases.append((movement["effectiveAt"], amount))
        tally = _tally(kind, bucket)
        if tally is not None:
            name, sign = tally
            total = getattr(result, name)
            setattr(result, name, total + amount if sign > 0 else total - amount)
    releases.sort(key=lambda release: release[0])  # stable: record order on ties
    result.reserve_schedule = [
        schedule_item(amount, at) for at, amount in releases[:RESERVE_SCHEDULE_SHOWN]
    ]
    return result


# What the totals need of one movement: (effective_at, seq, bucket, amount, release,
# transaction_id), `release` telling a reserve release's available leg (listed in the reserve
# schedule). Ordered by (effective_at, seq): seq is unique and grows in record order, so entries
# never compare beyond it and ties keep record order. A plain tuple of immutable values, not a
# NamedTuple and with no dict in it: the ledger keeps several per paid payment for its reserve
# days, and the cyclic GC stops tracking such a tuple after its first pass, where it re-walks
# every NamedTuple (or tuple holding a dict) at each full collection: a pause that grew with the
# payments made (docs/performance.md, "GC pauses").
_Entry = tuple[float, int, str, Decimal, bool, str | None]
# A release's place in the schedule: (effective_at, seq), its entry's sort key.
_ReleaseKey = tuple[float, int]


def _after(moment: float) -> tuple[float, float]:
    """A bisect key sorting after every entry effective at or before `moment`."""
    return (moment, inf)


class _Scope:
    """The running totals of one (merchant, environment)."""

    __slots__ = (
        "ahead",
        "ahead_sum",
        "dropped",
        "floor",
        "ids",
        "landed",
        "mark",
        "recent",
        "releases",
        "schedule",
        "settling",
        "tallies",
        "warnings",
    )

    def __init__(self, mark: float) -> None:
        self.ids: list[str] = []  # every movement id, in record order
        self.warnings: list[str] = []  # ids of the warning movements, in record order
        self.tallies: dict[str, Decimal] = {}  # Balance field -> time-independent total
        self.landed: dict[str, Decimal] = {AVAILABLE: ZERO, RESERVE: ZERO, FROZEN: ZERO}
        self.mark = mark  # landed = what is effective at or before the mark
        self.floor = mark - RECENT  # `recent` holds every entry effective in (floor, mark]
        # Effective after the mark: a heap (recording there costs O(log n) wherever it lands).
        self.ahead: list[_Entry] = []
        self.ahead_sum = ZERO
        self.dropped: set[int] = set()  # seqs of rolled-back entries still in the heap
        self.recent: list[_Entry] = []
        # The releases effective after the floor, sorted, and their reserve schedule items (kept
        # apart from the entries: the items are dicts, which would keep the entries tracked).
        self.releases: list[_ReleaseKey] = []
        self.schedule: dict[int, dict[str, Any]] = {}  # seq -> item
        # transaction id -> its entries in `available` effective after the mark
        self.settling: dict[str, tuple[_Entry, ...]] = {}

    def add(self, entry: _Entry, kind: str, shown: dict[str, Any] | None = None) -> None:
        """Count `entry`; `shown`: a release's reserve schedule item."""
        effective_at, seq, bucket, amount, _, transaction_id = entry
        self.tally(kind, bucket, amount)
        if effective_at > self.mark:
            heappush(self.ahead, entry)
            self.ahead_sum += amount
            if transaction_id is not None and bucket == AVAILABLE:
                self.settling[transaction_id] = (*self.settling.get(transaction_id, ()), entry)
        else:
            self.landed[bucket] += amount
            if effective_at > self.floor:
                insort(self.recent, entry)
        if shown is not None and effective_at > self.floor:
            insort(self.releases, (effective_at, seq))
            self.schedule[seq] = shown

    def land(self, kind: str, bucket: str, amount: Decimal) -> None:
        """Count `amount` of movements that landed before the recent window (start-up)."""
        self.tally(kind, bucket, amount)
        self.landed[bucket] += amount

    def tally(self, kind: str, bucket: str, amount: Decimal) -> None:
        tally = _tally(kind, bucket)
        if tally is not None:
            name, sign = tally
            total = self.tallies.get(name, ZERO)
            self.tallies[name] = total + amount if sign > 0 else total - amount

    def remove(self, entry: _Entry, kind: str) -> None:
        """Undo `add` (a rolled-back record)."""
        effective_at, seq, bucket, amount, release, transaction_id = entry
        self.tally(kind, bucket, -amount)
        if effective_at > self.mark:
            self.dropped.add(seq)  # left in the heap, skipped when it comes out
            self.ahead_sum -= amount
            if transaction_id is not None and bucket == AVAILABLE:
                self._unsettle(transaction_id, entry)
        else:
            self.landed[bucket] -= amount
            if effective_at > self.floor:
                _discard(self.recent, entry)
        if release and effective_at > self.floor:
            key = (effective_at, seq)
            index = bisect_left(self.releases, key)
            if index < len(self.releases) and self.releases[index] == key:
                del self.releases[index]
            self.schedule.pop(seq, None)

    def _unsettle(self, transaction_id: str, entry: _Entry) -> None:
        """Drop `entry` from its transaction's entries still settling."""
        rest = tuple(other for other in self.settling[transaction_id] if other is not entry)
        if rest:
            self.settling[transaction_id] = rest
        else:
            del self.settling[transaction_id]

    def advance(self, now: float) -> None:
        """Move the mark forward to `now`: fold what lands on the way into the landed totals."""
        ahead, dropped = self.ahead, self.dropped
        landed, recent = self.landed, self.recent
        # Popped in (effective_at, seq) order, all after the old mark: `recent` stays sorted.
        while ahead and ahead[0][0] <= now:  # its effective_at
            entry = heappop(ahead)
            _, seq, bucket, amount, _, transaction_id = entry
            if dropped and seq in dropped:
                dropped.discard(seq)
                continue
            landed[bucket] += amount
            self.ahead_sum -= amount
            if transaction_id is not None and bucket == AVAILABLE:
                self._unsettle(transaction_id, entry)
            recent.append(entry)
        self.mark = now
        floor = now - RECENT
        if floor > self.floor:
            self.floor = floor
            del self.recent[: bisect_right(self.recent, _after(floor))]
            passed = bisect_right(self.releases, _after(floor))
            for _, seq in self.releases[:passed]:
                del self.schedule[seq]
            del self.releases[:passed]

    def since(self, now: float) -> list[_Entry]:
        """The landed entries effective after `now` (floor <= now < mark)."""
        return self.recent[bisect_right(self.recent, _after(now)) :]


def _discard(entries: list[_Entry], entry: _Entry) -> None:
    index = bisect_left(entries, entry)
    if index < len(entries) and entries[index] is entry:
        del entries[index]


def _remove_last(ids: list[str], movement_id: str) -> None:
    """Remove `movement_id`, looked for from the end (a rolled-back record is among the last)."""
    for index in range(len(ids) - 1, -1, -1):
        if ids[index] == movement_id:
            del ids[index]
            return


class Ledger:
    def __init__(
        self,
        movements: Table[MovementRecord],
        now: Callable[[], float] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        """`now` (a callable giving simulated time), when given, lets start-up fold what has
        landed already, so that the first read does not. `rng` draws the movement ids (shown by
        GET /me/balance)."""
        self._table = movements
        self._now = now
        self._rng = rng
        self._seq = count()
        self._scopes: dict[tuple[str, str], _Scope] = {}
        # The latest records: movement id -> (scope, entry, type), for following a rollback.
        self._remembered: BoundedCache[str, tuple[tuple[str, str], _Entry, str]] = BoundedCache(
            REMEMBERED
        )
        self._stale = False
        self._build()

    def _build(self) -> None:
        self._scopes = {}
        self._remembered.clear()
        self._stale = False
        self._start_mark = -inf if self._now is None else self._now()
        stored = self._table.scan()
        floor = self._start_mark - RECENT
        # What landed before the recent window needs no entry: per scope, a count per (type,
        # bucket, stored amount), added to the totals once at the end (exact: Decimal products
        # and sums of cents). Movements come in runs of one scope: look it up once per run.
        counts: dict[tuple[str, str], dict[tuple[str, str, Any], int]] = {}
        last: tuple[str, str] | None = None
        of_scope: dict[tuple[str, str, Any], int] = {}
        ids: list[str] = []
        for movement in stored:
            scope = (movement["merchantId"], movement["environment"])
            if scope != last:
                if movement["effectiveAt"] > floor or scope not in counts:
                    self._add(scope, movement)
                    counts.setdefault(scope, {})
                    continue
                state, last = self._scopes[scope], scope
                of_scope, ids = counts[scope], state.ids
            elif movement["effectiveAt"] > floor:
                self._add(scope, movement)
                continue
            ids.append(movement["id"])
            key = (kind := movement["type"], movement["bucket"], movement["amount"])
            of_scope[key] = of_scope.get(key, 0) + 1
            if kind in WARNING_TYPES:
                self._scopes[scope].warnings.append(movement["id"])
        for scope, of_scope in counts.items():
            state = self._scopes[scope]
            for (kind, bucket, amount), times in of_scope.items():
                state.land(kind, bucket, dec(amount) * times)

    def _scope(self, scope: tuple[str, str]) -> _Scope | None:
        if self._stale:
            self._build()
        return self._scopes.get(scope)

    def _add(self, scope: tuple[str, str], movement: MovementRecord) -> _Entry:
        state = self._scopes.get(scope)
        if state is None:
            state = self._scopes[scope] = _Scope(self._start_mark)
        kind, bucket = movement["type"], movement["bucket"]
        amount, effective_at = dec(movement["amount"]), movement["effectiveAt"]
        release = kind == "reserve_release" and bucket == AVAILABLE
        shown = schedule_item(amount, effective_at) if release else None
        entry = (effective_at, next(self._seq), bucket, amount, release, movement["transactionId"])
        state.ids.append(movement["id"])
        if kind in WARNING_TYPES:
            state.warnings.append(movement["id"])
        state.add(entry, kind, shown)
        return entry

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
    ) -> MovementRecord:
        movement_id = unused(lambda: f"mv_{hex_token(self._rng, 8)}", self._table.get)
        movement: MovementRecord = {
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
        if self._stale:
            self._build()  # reads the movement just put, like every other stored one
            return movement
        self._remembered[movement_id] = (scope, self._add(scope, movement), kind)
        return movement

    def follow_rollback(self, movement_id: str, restored: MovementRecord | None) -> None:
        """Follow the store when a failed batch undoes the write of a movement (wire it with the
        table's `on_rollback`): the totals drop it as if it had never been recorded."""
        if self._stale:
            return
        known = self._remembered.pop(movement_id, None)
        if known is None or restored is not None:
            # Not one of the latest records, or a document put back: rebuild from the store
            # at the next use (once, however many writes this rollback undoes).
            self._stale = True
            return
        scope, entry, kind = known
        state = self._scopes[scope]
        state.remove(entry, kind)
        _remove_last(state.ids, movement_id)
        if kind in WARNING_TYPES:
            _remove_last(state.warnings, movement_id)

    # -- reads -----------------------------------------------------------------------------------

    def movements(self, scope: tuple[str, str]) -> list[MovementRecord]:
        """Every movement of the scope, in record order. O(history): for checks and tools."""
        state = self._scope(scope)
        return self._docs(state.ids if state is not None else ())

    def latest(self, scope: tuple[str, str], limit: int = MOVEMENTS_SHOWN) -> list[MovementRecord]:
        """The scope's `limit` latest movements (warnings included), in record order."""
        state = self._scope(scope)
        return self._docs(state.ids[-limit:] if state is not None and limit > 0 else ())

    def warnings(self, scope: tuple[str, str]) -> list[MovementRecord]:
        """The scope's warning movements (`WARNING_TYPES`), in record order."""
        state = self._scope(scope)
        return self._docs(state.warnings if state is not None else ())

    def _docs(self, ids: Iterable[str]) -> list[MovementRecord]:
        table = self._table
        return [m for mid in ids if (m := table.get(mid)) is not None]

    def balance(self, scope: tuple[str, str], now: float) -> Balance:
        state = self._scope(scope)
        if state is None:
            return Balance()
        if now < state.floor:
            return derive(self.movements(scope), now)
        if now >= state.mark:
            state.advance(now)
            back: list[_Entry] = []
        else:
            back = state.since(now)
        result = Balance(**state.tallies)  # type: ignore[arg-type]  # tallies: Decimal fields only
        available, reserve, frozen = (state.landed[b] for b in (AVAILABLE, RESERVE, FROZEN))
        pending = state.ahead_sum
        for _, _, bucket, amount, _, _ in back:  # landed after `now`: pending at `now`
            if bucket == AVAILABLE:
                available -= amount
            elif bucket == RESERVE:
                reserve -= amount
            else:
                frozen -= amount
            pending += amount
        result.available, result.reserve, result.frozen = available, reserve, frozen
        result.pending = pending
        releases, schedule = state.releases, state.schedule
        first = bisect_right(releases, _after(now))
        result.reserve_schedule = [
            schedule[seq] for _, seq in releases[first : first + RESERVE_SCHEDULE_SHOWN]
        ]
        return result

    def available(self, scope: tuple[str, str], now: float) -> Decimal:
        state = self._scope(scope)
        if state is None:
            return ZERO
        if now < state.floor:
            return derive(self.movements(scope), now).available
        if now >= state.mark:
            state.advance(now)
            return state.landed[AVAILABLE]
        total = state.landed[AVAILABLE]
        for _, _, bucket, amount, _, _ in state.since(now):
            if bucket == AVAILABLE:
                total -= amount
        return total

    def settling(self, scope: tuple[str, str], transaction_id: str, at: float) -> Decimal:
        """What the transaction still brings to `available` at its settlement instant `at`.

        Refunds and chargebacks of a payment whose money has not landed yet draw on this first:
        a debit dated `at` and no larger than this can never take `available` below zero.
        """
        state = self._scope(scope)
        if state is None:
            return ZERO
        if at <= state.mark:  # not in normal use: `at` is a settlement still ahead of now
            return _settling_of(self.movements(scope), transaction_id, at)
        # After the mark, so every entry effective at `at` is still ahead.
        total = ZERO
        for effective_at, _, _, amount, _, _ in state.settling.get(transaction_id, ()):
            if effective_at == at:
                total += amount
        return max(total, ZERO)


def _settling_of(movements: Iterable[MovementRecord], transaction_id: str, at: float) -> Decimal:
    total = ZERO
    for movement in movements:
        if (
            movement["transactionId"] == transaction_id
            and movement["bucket"] == AVAILABLE
            and movement["effectiveAt"] == at
        ):
            total += dec(movement["amount"])
    return max(total, ZERO)
