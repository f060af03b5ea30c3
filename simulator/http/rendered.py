"""Transaction views as JSON bytes, rendered once per stored version and reused.

GET /payments/{id} and the lists show the same view of the same stored document over and over;
building it (Decimals, ISO timestamps, links) and encoding it was four fifths of a 50-row page.
A rendered view depends only on the stored document, the caller's origin and, for
`settlement.status`, whether the simulated clock has passed `availableAt`. An entry remembers
the stored bytes object it came from (the store swaps in a new object on every write, and a
held object is never reused for another document), so a changed transaction is never served
stale. The entries are bounded, oldest out first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from simulator.domain.auth import Principal
from simulator.domain.errors import ApiError
from simulator.domain.views import settles_at, transaction_view
from simulator.jsonio import dumps
from simulator.memory import BoundedCache

DEFAULT_CAPACITY = 8192
_OWNER_FIELDS = ("merchantId", "environment", "shopId")


@dataclass(slots=True)
class _Rendered:
    stored: bytes  # the stored version this was rendered from (held: its identity is stable)
    base_url: str
    owner: dict[str, Any]  # what Principal.can_see reads
    settles_at: float | None  # when `settlement.status` turns `settled`; None: never by time
    settled: bool
    body: bytes


class RenderedTransactions:
    def __init__(
        self,
        stored: Callable[[str], bytes | None],
        now: Callable[[], float],
        capacity: int = DEFAULT_CAPACITY,
    ) -> None:
        self._stored = stored
        self._now = now
        self._entries: BoundedCache[str, _Rendered] = BoundedCache(capacity)

    def one(self, principal: Principal, tx_id: str, base_url: str) -> bytes:
        """The caller's transaction as JSON; transaction_not_found if it is not theirs."""
        entry = self._entry(tx_id, base_url, self._now())
        if entry is None or not principal.can_see(entry.owner):
            raise ApiError("transaction_not_found", f"No transaction {tx_id}.", param="id")
        return entry.body

    def many(self, tx_ids: Iterable[str], base_url: str) -> list[bytes]:
        """Views of transactions already known to be the caller's (a list page)."""
        now = self._now()
        return [entry.body for tx_id in tx_ids if (entry := self._entry(tx_id, base_url, now))]

    def _entry(self, tx_id: str, base_url: str, now: float) -> _Rendered | None:
        stored = self._stored(tx_id)
        if stored is None:
            return None
        entry = self._entries.get(tx_id)
        if (
            entry is not None
            and entry.stored is stored
            and entry.base_url == base_url
            and (entry.settles_at is None or (entry.settles_at <= now) == entry.settled)
        ):
            return entry
        tx = orjson.loads(stored)
        at = settles_at(tx)
        entry = _Rendered(
            stored=stored,
            base_url=base_url,
            owner={field: tx.get(field) for field in _OWNER_FIELDS},
            settles_at=at,
            settled=at is not None and at <= now,
            body=dumps(transaction_view(tx, base_url, now)),
        )
        self._entries[tx_id] = entry
        return entry
