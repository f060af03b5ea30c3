"""``Collection``: one named table, a tinydb ``Table`` whose writes are O(1).

tinydb's ``Table`` funnels every write through ``_update_table``, which copies the
whole table and hands it to ``Storage.write`` (a full rewrite).  ``Collection``
keeps tinydb's read/query API (``search``, ``all``, ``count``, iteration over
``Query`` objects) but writes single documents through ``JournalStorage.append``:
a dict assignment plus one appended journal line.

Document ids are caller-chosen strings (``document_id_class = str``).

``Collection[R]`` is generic in the record it holds, for type checkers only: the store hands out
``Collection[Any]`` (it holds JSON and checks nothing), which fits any ``Table[R]`` port, and the
repository the collection is given to declares the record (``simulator.domain.records``).

Ownership: the store keeps private copies.  ``put`` stores a copy of what it was
given and ``get``/``values`` return fresh copies (one orjson decode of the stored bytes,
~1 µs for a typical 400-byte doc, independent of how much is stored), so mutating a returned
doc never changes the store behind its back, and a rolled-back batch restores
exactly what was there.  ``search``/``all``/iteration are tinydb's and return
``Document`` objects that are *shallow* copies: do not mutate nested values of those.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, NoReturn, TypeVar

import orjson
from tinydb.queries import QueryLike
from tinydb.table import Document, Table

from simulator.store.journal import Doc, JournalStorage
from simulator.store.snapshot import no_gc

__all__ = ["Collection"]

R = TypeVar("R")


class Collection(Table, Generic[R]):
    """A named table of JSON documents keyed by string id."""

    document_id_class = str  # type: ignore[assignment]  # tinydb declares type[int]; ids are str

    def __init__(self, storage: JournalStorage, name: str) -> None:
        super().__init__(storage, name)
        self._journal = storage
        self._cache_generation = storage.generation

    # -- O(1) document API ---------------------------------------------------------

    def get(self, doc_id: str) -> R | None:  # type: ignore[override]
        """A copy of the document, or None.  (tinydb's ``get(cond)``: use ``search``.)"""
        raw = self._journal.table_data(self.name).get(doc_id)
        return None if raw is None else orjson.loads(raw)

    def raw(self, doc_id: str) -> bytes | None:
        """The document's stored JSON bytes, or None.  Every write stores a new bytes object,
        so the object's identity tells one version from the next (for caches of renderings)."""
        return self._journal.table_data(self.name).get(doc_id)

    def on_rollback(self, callback: Callable[[str, R | None], None]) -> None:
        """Call `callback(doc_id, restored doc or None)` for each write of this table that a
        failed batch undoes (for indexes kept beside the documents)."""
        name = self.name

        def listener(table: str, doc_id: str, doc: Any) -> None:  # a Doc or None, typed R
            if table == name:
                callback(doc_id, doc)

        self._journal.rollback_listeners.append(listener)

    def put(self, doc_id: str, doc: Mapping[str, Any]) -> None:
        """Insert or replace; durable when it returns (or at the end of the batch).

        Replacing keeps the document's place in the insertion order.
        """
        self._journal.append([(self.name, doc_id, dict(doc))])

    def delete(self, doc_id: str) -> None:
        """Remove the document; a no-op (nothing written) if it does not exist.

        Returns None to match the domain's ``Table`` port; use ``in`` to check first.
        """
        if doc_id in self._journal.table_data(self.name):
            self._journal.append([(self.name, doc_id, None)])

    def values(self) -> list[R]:
        """Copies of all documents, in insertion order.  O(n)."""
        with no_gc():  # all of them stay alive: let the collector not re-walk them as they come
            return [orjson.loads(raw) for raw in self._journal.table_data(self.name).values()]

    def scan(self) -> Iterator[R]:
        """A copy of each document in insertion order, decoded as the iteration reaches it.

        For a pass that keeps only a little of each document (an index built at start-up): the
        decoded documents never all exist at once.  It reads the table as it was when called.
        """
        return map(orjson.loads, list(self._journal.table_data(self.name).values()))

    def ids(self) -> list[str]:
        """All document ids, in insertion order."""
        return list(self._journal.table_data(self.name))

    def __len__(self) -> int:
        return len(self._journal.table_data(self.name))

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._journal.table_data(self.name)

    # -- tinydb integration ----------------------------------------------------------

    def search(self, cond: QueryLike) -> list[Document]:
        # tinydb caches query results and only clears the cache in its own write
        # path; our writes (and batch rollbacks) bump the storage generation instead.
        if self._cache_generation != self._journal.generation:
            self.clear_cache()
            self._cache_generation = self._journal.generation
        return super().search(cond)

    def contains(self, cond: QueryLike | None = None, doc_id: str | None = None) -> bool:  # type: ignore[override]
        # tinydb's version calls get(cond), which our get() does not take.
        if doc_id is not None:
            return doc_id in self
        if cond is not None:
            return any(cond(doc) for doc in self._journal.decoded(self.name).values())
        raise RuntimeError("You have to pass either cond or doc_id")

    # tinydb types a table's documents as Mappings (and its updaters mutate them): ours are Docs.
    def _read_table(self) -> dict[str, Any]:
        return self._journal.decoded(self.name)

    def _update_table(self, updater: Callable[[dict[Any, Mapping[str, Any]]], None]) -> None:
        """tinydb's bulk write path (update/remove/upsert/truncate by query).

        Those operations are O(n) by nature (they scan the table); here they also
        cost O(n) memory for the copy the updater mutates, but they write only the
        changed documents, as one journal line, and join an open batch.
        """
        current = self._journal.decoded(self.name)
        work: dict[Any, Any] = self._journal.decoded(self.name)
        updater(work)
        ops: list[tuple[str, str, Doc | None]] = [
            (self.name, doc_id, dict(doc))
            for doc_id, doc in work.items()
            if doc_id not in current or current[doc_id] != doc
        ]
        ops += [(self.name, doc_id, None) for doc_id in current if doc_id not in work]
        if ops:
            self._journal.append(ops)

    def _get_next_id(self) -> NoReturn:
        raise TypeError(
            f"collection {self.name!r} has caller-chosen string ids: use put(doc_id, doc)"
        )
