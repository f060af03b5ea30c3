"""The simulator's one persistent store: named collections of JSON documents.

Usage::

    with Store.open(data_dir) as store:
        payments = store.table("payments")
        with store.batch():                      # one atomic journal line
            payments.put("pay_1", {"status": "authorized", "amount": "10.00"})
            store.table("events").put("evt_1", {"payment": "pay_1"})
        payments.get("pay_1")                    # -> a copy, or None

Guarantees (see ``journal.py`` for how):

- a write costs the same however much is stored (one appended line; compaction
  runs every ``compact_every`` writes, or once the journal holds as many bytes as the
  snapshot (``compact_ratio``, at least ``compact_min_bytes``), in a background thread,
  so it never stalls the caller);
- a process killed with SIGKILL at any moment restarts with a readable store that
  holds every write that was acknowledged (``put``/``delete`` returned, or the
  outermost ``batch()`` exited); power-loss safety additionally needs ``fsync=True``;
- a second process opening the same data dir gets ``StoreLockedError``.

Values must be JSON-compatible (str, int, float, bool, None, list, dict with str
keys); callers store Decimals as strings.  Use a store from a single thread (the
event loop) and do not ``await`` inside a ``batch()``: every write made while a
batch is open joins it, whichever coroutine made it.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from simulator.store.collection import Collection
from simulator.store.journal import (
    DEFAULT_COMPACT_EVERY,
    DEFAULT_COMPACT_MIN_BYTES,
    DEFAULT_COMPACT_RATIO,
    JournalStorage,
    StoreCorruptError,
    StoreError,
    StoreLockedError,
)
from simulator.store.snapshot import Encoded

__all__ = ["Collection", "Encoded", "Store", "StoreCorruptError", "StoreError", "StoreLockedError"]


class Store:
    """A set of named ``Collection``s sharing one journal, lock and batch scope."""

    def __init__(self, storage: JournalStorage) -> None:
        """Prefer ``Store.open`` / ``Store.memory``."""
        self._storage = storage
        self._tables: dict[str, Collection[Any]] = {}

    @classmethod
    def open(
        cls,
        data_dir: Path | None,
        *,
        fsync: bool = False,
        compact_every: int = DEFAULT_COMPACT_EVERY,
        compact_ratio: float = DEFAULT_COMPACT_RATIO,
        compact_min_bytes: int = DEFAULT_COMPACT_MIN_BYTES,
    ) -> Self:
        """Open (creating if needed) the store in ``data_dir``; ``None`` = in memory.

        Raises ``StoreLockedError`` if another process holds the dir and
        ``StoreCorruptError`` if its files are damaged beyond a torn last write.
        ``fsync=True`` makes every acknowledged write survive power loss, at the
        cost of one fsync per write.  A background compaction starts once the journal holds
        `compact_every` lines or `compact_ratio` times the snapshot's bytes (at least
        `compact_min_bytes`), whichever comes first.
        """
        return cls(
            JournalStorage(
                data_dir,
                fsync=fsync,
                compact_every=compact_every,
                compact_ratio=compact_ratio,
                compact_min_bytes=compact_min_bytes,
            )
        )

    @classmethod
    def memory(cls) -> Self:
        """A store with no files and no lock, for unit tests."""
        return cls(JournalStorage(None))

    def table(self, name: str) -> Collection[Any]:
        """The collection called ``name`` (the same object on every call); its documents are
        whatever JSON was stored: the repository it is handed to says which record it holds."""
        collection = self._tables.get(name)
        if collection is None:
            collection = self._tables[name] = Collection(self._storage, name)
        return collection

    def table_names(self) -> list[str]:
        """Names of the collections that hold (or held) documents."""
        return list(self._storage.read())

    def batch(self) -> AbstractContextManager[None]:
        """Group writes on any collections into one atomic, durable unit.

        Writes inside are visible to reads at once and are written as ONE journal
        line when the outermost ``batch()`` exits.  If the block raises, its writes
        are undone in memory and nothing is written.  A nested ``batch()`` joins the
        outer one; if only the inner block raises (and the outer catches it), only
        the inner block's writes are undone.
        """
        return self._storage.batch()

    def replace(self, data: dict[str, dict[str, Any]]) -> None:
        """Replace every collection's documents by ``data`` (``{table: {doc_id: doc}}``), at once
        and durably: one snapshot written whole and renamed into place, so a process killed at
        any moment restarts with the old documents or the new ones, never a mix.  O(data); not
        inside a batch.

        The rollback listeners (``Collection.on_rollback``) are dropped: the indexes they fed
        were built on the old documents, and whoever builds new ones registers again."""
        self._storage.write(data)
        self._storage.rollback_listeners.clear()

    def export(self) -> Encoded:
        """Every table's documents as their stored JSON bytes (``{table: {doc_id: bytes}}``), a
        consistent copy taken in O(documents) without encoding anything; the copy is the
        caller's.  Every table is in it, whoever created it."""
        return self._storage.export()

    def replace_encoded(self, data: Encoded, snapshot: bytes | None = None) -> None:
        """``replace`` with documents already encoded (an ``export`` or a decoded snapshot file):
        the same one atomic rewrite, without decoding and encoding each document again.  The
        documents must be JSON objects' bytes as ``export`` gives them; `data` becomes the
        store's own (do not change it afterwards).  `snapshot`: the bytes of a snapshot in the
        store's format that holds exactly `data` (a saved state's file), written as they are
        rather than encoded again."""
        self._storage.write_encoded(data, snapshot)
        self._storage.rollback_listeners.clear()

    def compact(self) -> None:
        """Snapshot everything and empty the journal now, in this thread (normally automatic,
        in the background)."""
        self._storage.compact()

    def close(self) -> None:
        """Wait for a background compaction, compact, close files and release the lock.
        Idempotent."""
        self._storage.close()

    @property
    def in_batch(self) -> bool:
        return self._storage.in_batch

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
