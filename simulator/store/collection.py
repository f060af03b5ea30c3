"""``Collection``: one named table of the store, with O(1) reads and writes.

What of tinydb the store uses, plainly: ``JournalStorage`` is a tinydb ``Storage`` (its
``read``/``write`` give and take the whole ``{table: {doc_id: doc}}``), and ``Collection.query()``
hands out a tinydb ``Table`` over it, for tinydb's query API (``search``, ``count``,
``contains``, ``update``/``remove`` by ``Query``) when inspecting a store or in tests: each call
reads the whole table and a tinydb write rewrites the store, so production code never calls it.
The server's code uses only the methods of this class: tinydb's own ``Table`` funnels every
write through a full copy of the table (design.md 2.5), which the journal avoids by appending one
line per write.

Document ids are caller-chosen strings.

``Collection[R]`` is generic in the record it holds, for type checkers only: the store hands out
``Collection[Any]`` (it holds JSON and checks nothing), which fits any ``Table[R]`` port, and the
repository the collection is given to declares the record (``simulator.domain.records``).

Ownership: the store keeps private copies.  ``put`` stores a copy of what it was
given and ``get``/``values``/``scan`` return fresh copies (one orjson decode of the stored bytes,
~1 µs for a typical 400-byte doc, independent of how much is stored), so mutating a returned
doc never changes the store behind its back, and a rolled-back batch restores
exactly what was there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final, Generic, NoReturn, TypeVar

import orjson
from tinydb.table import Table

from simulator.memory import no_gc
from simulator.store.journal import JournalStorage
from simulator.store.journal_format import op_head
from simulator.store.pending import MISSING

_dumps = orjson.dumps
_NEWLINE: Final = orjson.OPT_APPEND_NEWLINE

__all__ = ["Collection"]

R = TypeVar("R")


class _QueryTable(Table):
    """tinydb's Table over the journal storage, with the store's string document ids."""

    document_id_class = str  # type: ignore[assignment]  # tinydb declares type[int]; ids are str

    def _get_next_id(self) -> NoReturn:
        raise TypeError(
            f"collection {self.name!r} has caller-chosen string ids: use put(doc_id, doc)"
        )


class Collection(Generic[R]):
    """A named table of JSON documents keyed by string id."""

    def __init__(self, storage: JournalStorage, name: str) -> None:
        self.name = name
        self._journal = storage
        self._head = op_head(name)  # None: every write raises, as `append` says why

    # -- O(1) document API ---------------------------------------------------------

    def get(self, doc_id: str) -> R | None:
        """A copy of the document, or None.  (tinydb's ``get(cond)``: ``query().get(cond)``.)"""
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
        # Inside a batch (every write of a request), `JournalStorage.append`'s steps for one op
        # are written out here: no op tuple, list or zip, no call into the storage. The document
        # is serialised once: its bytes are both what memory keeps and what the line holds.
        journal = self._journal
        batch = journal._batch
        head = self._head
        if batch is None or head is None or type(doc) is not dict or type(doc_id) is not str:
            journal.append([(self.name, doc_id, dict(doc))])  # raises for what these turn away
            return
        # Everything that can fail (a non-JSON value, an id orjson refuses) before any change.
        raw = _dumps(doc, option=_NEWLINE)[:-1]  # sized to fit (`compact_bytes`)
        fragment = b"".join((head, _dumps(doc_id), b",", raw, b"]"))
        docs = journal._data.get(self.name)
        if docs is None:
            docs = journal._data[self.name] = {}
        batch.undo.append((self.name, doc_id, docs.get(doc_id, MISSING)))
        docs[doc_id] = raw
        batch.fragments.append(fragment)

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

    # -- tinydb's query API -------------------------------------------------------------

    def query(self) -> Table:
        """tinydb's ``Table`` API over this table, as of now: O(table) per call, and a write
        through it rewrites the whole store. For inspection and tests, never the server."""
        return _QueryTable(self._journal, self.name, cache_size=0)
