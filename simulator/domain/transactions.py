"""Transaction records and their indexes, so a list costs what its page costs, not the store.

Every transaction sits in sorted id lists (by creation) keyed on (merchant, environment, shop or
None, status or None); `status` "chargeback" lists completed payments with a chargeback claim, as
the spec's filter does. Each of those lists is also kept split by what the other list filters
read (payment method id, country, legacy slug), so a filtered list merges the few split lists
its filters select instead of walking every row; a `merchantOrderId` filter reads the order id's
own list (a handful of rows). Only the rows of the page are read from the store.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from dataclasses import dataclass
from heapq import merge
from itertools import islice
from typing import TYPE_CHECKING, NamedTuple, TypeAlias

from sortedcontainers import SortedList

from simulator.domain.auth import Scope
from simulator.domain.errors import ApiError
from simulator.domain.ports import Table
from simulator.memory import no_gc

if TYPE_CHECKING:
    from simulator.domain.auth import Principal
    from simulator.domain.records import TransactionRecord

# What the method, country and slug filters read of a transaction: (paymentMethodId, country,
# paymentMethod); one catalogue method has one of each, so a scope holds a few dozen at most.
Kind = tuple[str, str, str]
# (merchant, environment, shop or None, status or None, kind or None): None lists every value.
IndexKey = tuple[str, str, str | None, str | None, Kind | None]
ListKey = tuple[str, str, str | None, str | None]
SortKey = tuple[float, str]
OrderKey = tuple[str, str, str]  # (merchant, environment, merchantOrderId)
# (merchant, environment, shop, statuses, paymentMethodId, country, paymentMethod)
Group = tuple[str, str, str, tuple[str, ...], str, str, str]
# An index list, newest last. A status's list loses a row whenever a transaction leaves that
# status (pending -> completed: mostly near its oldest end), where a plain list's `del` moved
# every later row: sorted in chunks (sortedcontainers), which moves one chunk. The lists of every
# status only gain rows, at their end: plain lists (an append; a SortedList's add costs a payment
# about 0.4 % of its instructions per list).
Rows: TypeAlias = list[SortKey] | SortedList
# A RowKeys as the index keeps it, field for field (see `RowKeys.plain`).
PlainKeys = tuple[str, str, str, tuple[str, ...], str, str, str, str | None, float]


class RowKeys(NamedTuple):
    """What the filters read of a transaction, kept beside the index (a NamedTuple: built three
    times faster than a frozen dataclass, once per payment and per stored one at start-up)."""

    merchant_id: str
    environment: str
    shop_id: str
    statuses: tuple[str, ...]  # its status, plus "chargeback" while it carries a claim
    payment_method_id: str
    country: str
    method: str
    merchant_order_id: str | None
    created_at: float

    @classmethod
    def of(cls, tx: TransactionRecord) -> RowKeys:
        statuses = (tx["status"], "chargeback") if tx.get("chargebackClaimId") else (tx["status"],)
        return cls(
            merchant_id=tx["merchantId"],
            environment=tx["environment"],
            shop_id=tx["shopId"],
            statuses=statuses,
            payment_method_id=tx["paymentMethodId"],
            country=tx["country"],
            method=tx["paymentMethod"],
            merchant_order_id=tx.get("merchantOrderId"),
            created_at=tx["createdAt"],
        )

    def plain(self) -> PlainKeys:
        """The same values in a plain tuple, as the index keeps them for every transaction: the
        cyclic GC stops tracking a plain tuple of strings and numbers after its first pass, where
        it re-walks every NamedTuple at each full collection (a pause that grew with the payments
        stored: docs/performance.md, "GC pauses"). `RowKeys._make` gives the fields back."""
        return (*self,)

    @property
    def kind(self) -> Kind:
        return (self.payment_method_id, self.country, self.method)

    def group(self) -> Group:
        """What decides the lists a transaction is in (`index_keys`), as one plain tuple: the
        fields before `merchant_order_id` (their order is for this slice)."""
        return self[:7]

    def order_key(self) -> OrderKey | None:
        if self.merchant_order_id is None:
            return None
        return (self.merchant_id, self.environment, self.merchant_order_id)

    def index_keys(self) -> list[IndexKey]:
        """Every list this transaction is in: merchant-wide and its shop's, all statuses and
        each of its own, each whole and split by kind (in no particular order)."""
        merchant, environment, shop, kind = self.merchant_id, self.environment, self.shop_id, None
        keys: list[IndexKey] = []
        for kind in (None, self.kind):
            keys += (
                (merchant, environment, None, None, kind),
                (merchant, environment, shop, None, kind),
            )
            for status in self.statuses:
                keys += (
                    (merchant, environment, None, status, kind),
                    (merchant, environment, shop, status, kind),
                )
        return keys


@dataclass(frozen=True, slots=True)
class TransactionFilters:
    shop_id: str | None = None
    status: str | None = None
    payment_method_id: str | None = None
    country: str | None = None
    merchant_order_id: str | None = None
    method: str | None = None

    def list_key(self, scope: Scope) -> ListKey:
        return (scope[0], scope[1], self.shop_id, self.status)

    def by_kind(self) -> bool:
        return any(
            value is not None for value in (self.payment_method_id, self.country, self.method)
        )

    def selects(self, kind: Kind) -> bool:
        payment_method_id, country, method = kind
        return (
            (self.payment_method_id is None or payment_method_id == self.payment_method_id)
            and (self.country is None or country == self.country)
            and (self.method is None or method == self.method)
        )

    def matches(self, keys: RowKeys) -> bool:
        """Every filter but the scope (for a row found through its order id)."""
        return (
            (self.shop_id is None or keys.shop_id == self.shop_id)
            and (self.status is None or self.status in keys.statuses)
            and (self.merchant_order_id is None or keys.merchant_order_id == self.merchant_order_id)
            and self.selects(keys.kind)
        )


class TransactionRepository:
    def __init__(self, table: Table[TransactionRecord]) -> None:
        self._table = table
        self._keys: dict[str, PlainKeys] = {}
        self._index: dict[IndexKey, Rows] = {}
        # The kinds each list is split by (every split list is also in `_index`).
        self._kinds: dict[ListKey, dict[Kind, Rows]] = {}
        # Tuples, not lists (an order id has a payment or two): the GC untracks them, as `plain`.
        self._by_order: dict[OrderKey, tuple[SortKey, ...]] = {}
        # Each group's lists by identity: two groups' lists compare as sets of keys (`save`).
        self._lists_by_group: dict[Group, dict[int, Rows]] = {}
        self._load()

    def visible(self, principal: Principal, transaction_id: str) -> TransactionRecord:
        """The caller's transaction, or 404 `transaction_not_found` (also for another's)."""
        tx = self.get(transaction_id)
        if tx is None or not principal.can_see(tx):
            raise ApiError("transaction_not_found", f"No transaction {transaction_id}.", param="id")
        return tx

    def _rows(self, key: IndexKey) -> Rows:
        """The index list of `key`, made (and listed under its kind) the first time."""
        rows = self._index.get(key)
        if rows is None:
            rows = self._index[key] = [] if key[3] is None else SortedList()
            kind = key[4]
            if kind is not None:
                self._kinds.setdefault(key[:4], {})[kind] = rows
        return rows

    def _load(self) -> None:
        """Index what is stored: each transaction decoded once, one at a time (only its RowKeys
        stay), each index gathered in a plain list and then sorted into its index once."""
        stored = self._table.scan()
        keys_of = self._keys
        gathered: dict[IndexKey, list[SortKey]] = {}
        gathered_by_group: dict[Group, tuple[list[SortKey], ...]] = {}
        by_order: dict[OrderKey, list[SortKey]] = {}
        # Every key, entry and index list stays alive: the cyclic GC re-walking them as they
        # accumulate would cost as much as building them (none can be part of a cycle).
        with no_gc():
            for tx in stored:
                tx_id = tx["id"]
                keys = RowKeys.of(tx)
                keys_of[tx_id] = keys.plain()
                entry = (keys.created_at, tx_id)
                lists = gathered_by_group.get(group := keys.group())
                if lists is None:
                    lists = gathered_by_group[group] = tuple(
                        gathered.setdefault(key, []) for key in keys.index_keys()
                    )
                for rows in lists:
                    rows.append(entry)
                if (order := keys.order_key()) is not None:
                    by_order.setdefault(order, []).append(entry)
            for key, rows in gathered.items():
                rows.sort()
                index = self._rows(key)
                index.extend(rows) if isinstance(index, list) else index.update(rows)
            self._by_order = {order: tuple(sorted(rows)) for order, rows in by_order.items()}

    def _insert(self, tx_id: str, keys: RowKeys) -> None:
        self._keys[tx_id] = keys.plain()
        entry = (keys.created_at, tx_id)
        lists = self._lists_of(keys).values()
        if (order := keys.order_key()) is not None:
            self._by_order[order] = _with(self._by_order.get(order, ()), entry)
        for rows in lists:
            if not isinstance(rows, list):
                rows.add(entry)
            # A new payment is the newest of its lists (the clock only moves on): appended, with
            # no search; anything else (a restored write, an equal instant) goes in its place.
            elif rows and entry < rows[-1]:
                insort(rows, entry)
            else:
                rows.append(entry)

    def _lists_of(self, keys: RowKeys) -> dict[int, Rows]:
        """The index lists a transaction with these keys is in (`RowKeys.index_keys`), kept per
        group (`RowKeys.group`): found once, not looked up by eight keys on every payment. The
        lists are never replaced, only changed in place."""
        group = keys.group()
        lists = self._lists_by_group.get(group)
        if lists is None:
            rows_of_keys = map(self._rows, keys.index_keys())
            lists = self._lists_by_group[group] = {id(rows): rows for rows in rows_of_keys}
        return lists

    def _remove(self, tx_id: str, keys: RowKeys, only: set[IndexKey]) -> None:
        entry = (keys.created_at, tx_id)
        for key in only:
            _drop_row(self._index[key], entry)

    def add(self, tx: TransactionRecord) -> None:
        self._table.put(tx["id"], tx)
        self._insert(tx["id"], RowKeys.of(tx))

    def save(self, tx: TransactionRecord) -> None:
        self._table.put(tx["id"], tx)
        kept = self._keys.get(tx["id"])
        new = RowKeys.of(tx)
        if kept == new:
            return
        if kept is None:
            self._insert(tx["id"], new)
            return
        old = RowKeys._make(kept)
        # The two groups' lists compared by identity (one list per index key): a status change
        # leaves four of eight in place, with no index key built or hashed on a save.
        old_lists, new_lists = self._lists_of(old), self._lists_of(new)
        entry = (old.created_at, tx["id"])
        for gone in old_lists.keys() - new_lists.keys():
            _drop_row(old_lists[gone], entry)
        self._keys[tx["id"]] = new.plain()
        entry = (new.created_at, tx["id"])
        for joined in new_lists.keys() - old_lists.keys():
            _add_row(new_lists[joined], entry)
        if old.order_key() != new.order_key() or old.created_at != new.created_at:
            self._forget_order(tx["id"], old)
            if (order := new.order_key()) is not None:
                self._by_order[order] = _with(self._by_order.get(order, ()), entry)

    def _forget_order(self, tx_id: str, keys: RowKeys) -> None:
        order = keys.order_key()
        if order is not None and order in self._by_order:
            entry = (keys.created_at, tx_id)
            rest = tuple(row for row in self._by_order[order] if row != entry)
            if rest:
                self._by_order[order] = rest
            else:
                del self._by_order[order]

    def get(self, transaction_id: str) -> TransactionRecord | None:
        return self._table.get(transaction_id)

    def reindex(self, transaction_id: str, restored: TransactionRecord | None) -> None:
        """Follow the store when a failed batch undoes a write of this transaction."""
        kept = self._keys.pop(transaction_id, None)
        if kept is not None:
            old = RowKeys._make(kept)
            self._remove(transaction_id, old, set(old.index_keys()))
            self._forget_order(transaction_id, old)
        if restored is not None:
            self._insert(transaction_id, RowKeys.of(restored))

    def page(
        self, scope: tuple[str, str], filters: TransactionFilters, limit: int, offset: int
    ) -> tuple[list[TransactionRecord], int]:
        chosen, total = self.page_ids(scope, filters, limit, offset)
        page = [tx for tx_id in chosen if (tx := self._table.get(tx_id)) is not None]
        return page, total

    def page_ids(
        self, scope: tuple[str, str], filters: TransactionFilters, limit: int, offset: int
    ) -> tuple[list[str], int]:
        """The ids of one page, newest first, and how many match in all."""
        if filters.merchant_order_id is not None:
            return self._page_by_order(scope, filters, limit, offset)
        key = filters.list_key(scope)
        if not filters.by_kind():
            return _page_of([self._index.get((*key, None), [])], limit, offset)
        kinds = self._kinds.get(key, {})
        return _page_of(
            [rows for kind, rows in kinds.items() if filters.selects(kind)], limit, offset
        )

    def _page_by_order(
        self, scope: tuple[str, str], filters: TransactionFilters, limit: int, offset: int
    ) -> tuple[list[str], int]:
        """A page of the transactions of one merchant order id (a handful, looked at each)."""
        assert filters.merchant_order_id is not None
        rows = self._by_order.get((scope[0], scope[1], filters.merchant_order_id), ())
        total, chosen = 0, []
        for _, tx_id in reversed(rows):
            if filters.matches(RowKeys._make(self._keys[tx_id])):
                if offset <= total < offset + limit:
                    chosen.append(tx_id)
                total += 1
        return chosen, total


def _page_of(lists: list[Rows], limit: int, offset: int) -> tuple[list[str], int]:
    """One page, newest first, of the rows of sorted lists that share no row."""
    total = sum(map(len, lists))
    if len(lists) == 1:
        rows = lists[0]
        end = max(total - offset, 0)
        return [tx_id for _, tx_id in reversed(rows[max(end - limit, 0) : end])], total
    newest_first = merge(*(reversed(rows) for rows in lists), reverse=True)
    return [tx_id for _, tx_id in islice(newest_first, offset, offset + limit)], total


def _add_row(rows: Rows, entry: SortKey) -> None:
    """`entry` in its place in a plain or a sorted index list (off the hot path: `_insert` has
    the newest-row append inline)."""
    insort(rows, entry) if isinstance(rows, list) else rows.add(entry)


def _drop_row(rows: Rows, entry: SortKey) -> None:
    _discard(rows, entry) if isinstance(rows, list) else rows.discard(entry)


def _discard(rows: list[SortKey], entry: SortKey) -> None:
    at = bisect_left(rows, entry)
    if at < len(rows) and rows[at] == entry:
        del rows[at]


def _with(rows: tuple[SortKey, ...], entry: SortKey) -> tuple[SortKey, ...]:
    """`rows` (sorted) with `entry` in its place."""
    at = bisect_left(rows, entry)
    return (*rows[:at], entry, *rows[at:])
