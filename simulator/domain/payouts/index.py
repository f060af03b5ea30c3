"""The payouts of each scope in creation order, kept whole and split by every filter of the list
(status, method id, both), so a page of `GET /me/payout/send` costs what the page costs, not
every payout the merchant ever sent."""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterable
from typing import TYPE_CHECKING

from simulator.domain.auth import Scope

if TYPE_CHECKING:
    from simulator.domain.records import PayoutRecord

# (scope, status or None, method id or None): None lists every value.
PayoutListKey = tuple[Scope, str | None, str | None]


class PayoutIndex:
    def __init__(self, stored: Iterable[PayoutRecord]) -> None:
        self._ids: list[str] = []  # by position: creation order, as the list answers it
        self._position: dict[str, int] = {}
        self._keys: dict[str, list[PayoutListKey]] = {}
        self._lists: dict[PayoutListKey, list[int]] = {}
        # Creation order; equal instants keep the store's order (a stable sort).
        for payout in sorted(stored, key=lambda payout: payout["createdAt"]):
            self.add(payout)

    def add(self, payout: PayoutRecord) -> None:
        payout_id = payout["id"]
        position = self._position[payout_id] = len(self._ids)
        self._ids.append(payout_id)
        keys = self._keys[payout_id] = _keys_of(payout)
        for key in keys:
            self._lists.setdefault(key, []).append(position)

    def follow(self, payout: PayoutRecord) -> None:
        """Keep a saved payout in the lists its status (and method) put it in now."""
        payout_id = payout["id"]
        old = self._keys.get(payout_id)
        if old is None:
            self.add(payout)
            return
        new = _keys_of(payout)
        if new == old:
            return
        position = self._position[payout_id]
        for key in set(old) - set(new):
            _discard(self._lists[key], position)
        for key in set(new) - set(old):
            insort(self._lists.setdefault(key, []), position)
        self._keys[payout_id] = new

    def forget(self, payout_id: str) -> None:
        keys = self._keys.pop(payout_id, None)
        if keys is not None:
            position = self._position.pop(payout_id)
            for key in keys:
                _discard(self._lists[key], position)

    def page(
        self, scope: Scope, status: str | None, method_id: str | None, limit: int, offset: int
    ) -> tuple[list[str], int]:
        """The ids of one page, newest first, and how many match in all."""
        rows = self._lists.get((scope, status, method_id), [])
        total = len(rows)
        end = max(total - offset, 0)
        ids = self._ids
        return [ids[position] for position in reversed(rows[max(end - limit, 0) : end])], total


def _keys_of(payout: PayoutRecord) -> list[PayoutListKey]:
    scope = (payout["merchantId"], payout["environment"])
    status, method_id = payout["status"], payout["methodId"]
    return [
        (scope, None, None),
        (scope, status, None),
        (scope, None, method_id),
        (scope, status, method_id),
    ]


def _discard(rows: list[int], position: int) -> None:
    at = bisect_left(rows, position)
    if at < len(rows) and rows[at] == position:
        del rows[at]
