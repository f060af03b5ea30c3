"""Transaction records and their indexes, so a list costs what its page costs, not the store.

Every transaction sits in sorted id lists (by creation) keyed on (merchant, environment, shop or
None, status or None); `status` "chargeback" lists completed payments with a chargeback claim, as
the spec's filter does. A list with no further filter is a slice of one index; the other filters
(method, country, merchantOrderId) scan the narrowest index over small in-memory keys, and only
the rows of the page are read from the store.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from simulator.domain.errors import ApiError
from simulator.domain.ports import Table
from simulator.memory import no_gc

if TYPE_CHECKING:
    from simulator.domain.auth import Principal

if TYPE_CHECKING:
    from simulator.domain.records import TransactionRecord

IndexKey = tuple[str, str, str | None, str | None]
SortKey = tuple[float, str]


class RowKeys(NamedTuple):
    """What the filters read of a transaction, kept beside the index (a NamedTuple: built three
    times faster than a frozen dataclass, once per payment and per stored one at start-up)."""

    merchant_id: str
    environment: str
    shop_id: str
    statuses: tuple[str, ...]  # its status, plus "chargeback" while it carries a claim
    payment_method_id: str
    country: str
    merchant_order_id: str | None
    method: str
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
            merchant_order_id=tx.get("merchantOrderId"),
            method=tx["paymentMethod"],
            created_at=tx["createdAt"],
        )

    def index_keys(self) -> list[IndexKey]:
        """Every list this transaction is in: merchant-wide and its shop's, all statuses and
        each of its own (in no particular order)."""
        merchant, environment, shop = self.merchant_id, self.environment, self.shop_id
        keys: list[IndexKey] = [
            (merchant, environment, None, None),
            (merchant, environment, shop, None),
        ]
        for status in self.statuses:
            keys += ((merchant, environment, None, status), (merchant, environment, shop, status))
        return keys


@dataclass(frozen=True, slots=True)
class TransactionFilters:
    shop_id: str | None = None
    status: str | None = None
    payment_method_id: str | None = None
    country: str | None = None
    merchant_order_id: str | None = None
    method: str | None = None

    def index_key(self, scope: tuple[str, str]) -> IndexKey:
        return (scope[0], scope[1], self.shop_id, self.status)

    def narrows_further(self) -> bool:
        return any(
            value is not None
            for value in (self.payment_method_id, self.country, self.merchant_order_id, self.method)
        )

    def matches(self, keys: RowKeys) -> bool:
        return (
            (self.payment_method_id is None or keys.payment_method_id == self.payment_method_id)
            and (self.country is None or keys.country == self.country)
            and (self.merchant_order_id is None or keys.merchant_order_id == self.merchant_order_id)
            and (self.method is None or keys.method == self.method)
        )


class TransactionRepository:
    def __init__(self, table: Table[TransactionRecord]) -> None:
        self._table = table
        self._keys: dict[str, RowKeys] = {}
        self._index: dict[IndexKey, list[SortKey]] = defaultdict(list)
        self._lists_by_group: dict[tuple[str, str, str, tuple[str, ...]], tuple[list[SortKey], ...]]
        self._lists_by_group = {}
        self._load()

    def visible(self, principal: Principal, transaction_id: str) -> TransactionRecord:
        """The caller's transaction, or 404 `transaction_not_found` (also for another's)."""
        tx = self.get(transaction_id)
        if tx is None or not principal.can_see(tx):
            raise ApiError("transaction_not_found", f"No transaction {transaction_id}.", param="id")
        return tx

    def _load(self) -> None:
        """Index what is stored: each transaction decoded once, one at a time (only its RowKeys
        stay), each index appended to and then sorted once (nearly sorted already: the store
        keeps insertion order)."""
        stored = self._table.scan()
        index, keys_of = self._index, self._keys
        # Every RowKeys, entry and index list stays alive: the cyclic GC re-walking them as they
        # accumulate would cost as much as building them (none can be part of a cycle).
        with no_gc():
            for tx in stored:
                tx_id = tx["id"]
                keys = keys_of[tx_id] = RowKeys.of(tx)
                entry = (keys.created_at, tx_id)
                for key in keys.index_keys():
                    index[key].append(entry)
            for rows in index.values():
                rows.sort()

    def _insert(self, tx_id: str, keys: RowKeys) -> None:
        self._keys[tx_id] = keys
        entry = (keys.created_at, tx_id)
        for rows in self._lists_by_group.get(keys[:4]) or self._lists_of(keys):
            # A new payment is the newest of its lists (the clock only moves on): appended, with
            # no search; anything else (a restored write, an equal instant) goes in its place.
            if rows and entry < rows[-1]:
                insort(rows, entry)
            else:
                rows.append(entry)

    def _lists_of(self, keys: RowKeys) -> tuple[list[SortKey], ...]:
        """The index lists a transaction with these keys is in (`RowKeys.index_keys`), kept per
        (merchant, environment, shop, statuses): found once, not looked up by four keys on every
        payment. The lists are never replaced, only changed in place."""
        group = keys[:4]  # (merchant_id, environment, shop_id, statuses), a plain tuple
        lists = self._lists_by_group.get(group)
        if lists is None:
            index = self._index
            lists = self._lists_by_group[group] = tuple(index[key] for key in keys.index_keys())
        return lists

    def _remove(self, tx_id: str, keys: RowKeys, only: set[IndexKey]) -> None:
        entry = (keys.created_at, tx_id)
        for key in only:
            rows = self._index[key]
            at = bisect_left(rows, entry)
            if at < len(rows) and rows[at] == entry:
                del rows[at]

    def add(self, tx: TransactionRecord) -> None:
        self._table.put(tx["id"], tx)
        self._insert(tx["id"], RowKeys.of(tx))

    def save(self, tx: TransactionRecord) -> None:
        self._table.put(tx["id"], tx)
        old = self._keys.get(tx["id"])
        new = RowKeys.of(tx)
        if old == new:
            return
        if old is None:
            self._insert(tx["id"], new)
            return
        old_keys, new_keys = set(old.index_keys()), set(new.index_keys())
        self._remove(tx["id"], old, old_keys - new_keys)
        self._keys[tx["id"]] = new
        entry = (new.created_at, tx["id"])
        for key in new_keys - old_keys:
            insort(self._index[key], entry)

    def get(self, transaction_id: str) -> TransactionRecord | None:
        return self._table.get(transaction_id)

    def reindex(self, transaction_id: str, restored: TransactionRecord | None) -> None:
        """Follow the store when a failed batch undoes a write of this transaction."""
        old = self._keys.pop(transaction_id, None)
        if old is not None:
            self._remove(transaction_id, old, set(old.index_keys()))
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
        rows = self._index.get(filters.index_key(scope), [])
        if not filters.narrows_further():
            total = len(rows)
            end = max(total - offset, 0)
            chosen = [tx_id for _, tx_id in reversed(rows[max(end - limit, 0) : end])]
        else:
            total, chosen = 0, []
            for _, tx_id in reversed(rows):
                if filters.matches(self._keys[tx_id]):
                    if offset <= total < offset + limit:
                        chosen.append(tx_id)
                    total += 1
        return chosen, total
