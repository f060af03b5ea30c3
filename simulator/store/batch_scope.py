"""The scope of `with store.batch():` over a journal storage (simulator/store/journal.py).

Apart from the storage because it is the one part every write of the server goes through, and
written against the few members of the storage it drives (`BatchedStorage`), not the storage.
"""

from __future__ import annotations

from types import TracebackType
from typing import Protocol

from simulator.store.pending import Batch, Compaction


class BatchedStorage(Protocol):
    """What a batch scope reads and calls of its storage (`JournalStorage`'s own members)."""

    _batch: Batch | None
    _idle_batch: Batch
    _compaction: Compaction | None
    _lines: int
    _compact_at: int
    _size: int
    _compact_bytes_at: int

    def _undo(self, batch: Batch, mark: int) -> None: ...
    def _write_line(self, fragments: list[bytes]) -> None: ...
    def _maybe_compact(self) -> None: ...


class BatchScope:
    """``with storage.batch():`` — see ``Store.batch``. One per storage, handed out by every
    ``batch()``: the open batch (its nesting included) is the storage's, so a scope holds
    nothing of its own and costs no object per batch. Every batch of the server goes through
    here, so the steps are written out rather than called."""

    __slots__ = ("_storage",)

    def __init__(self, storage: BatchedStorage) -> None:
        self._storage = storage

    def __enter__(self) -> None:
        storage = self._storage
        batch = storage._batch
        if batch is None:
            storage._batch = storage._idle_batch
        else:  # a nested scope joins the open batch; a failure undoes its writes only
            batch.marks.append(len(batch.undo))

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        storage = self._storage
        batch = storage._batch
        assert batch is not None
        if batch.marks:  # nested: the outermost scope commits
            mark = batch.marks.pop()
            if exc_type is not None:
                # A caller that catches the exception inside an outer batch keeps the outer
                # writes.
                storage._undo(batch, mark)
            return
        if exc_type is not None:
            try:
                storage._undo(batch, 0)
            finally:  # the next batch starts empty even if a rollback listener failed
                storage._batch = None
                batch.fragments.clear()
                batch.undo.clear()
            return
        storage._batch = None
        if not batch.fragments:  # (then its undo log is empty too: one entry per fragment)
            return
        try:
            storage._write_line(batch.fragments)
        except BaseException:
            try:
                storage._undo(batch, 0)
            finally:
                batch.fragments.clear()
                batch.undo.clear()
            raise
        batch.fragments.clear()
        batch.undo.clear()
        if (
            storage._compaction is not None
            or storage._lines >= storage._compact_at
            or storage._size >= storage._compact_bytes_at
        ):
            storage._maybe_compact()  # (its own test, written out: a call per commit for nothing)
