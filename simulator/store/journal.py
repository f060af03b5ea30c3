"""Durable storage for the store: an in-memory dict plus an append-only journal.

Why not tinydb's ``JSONStorage``: it re-serialises and rewrites the whole file on
every write (cost grows with the data) and a crash mid-rewrite can leave the only
copy of the data truncated.  Here every acknowledged write is one appended line, so
a write costs the same whether the store holds ten documents or a million, and a
crash can at worst leave a torn *last* line, which was never acknowledged.

On-disk layout of a data dir::

    LOCK           flock()ed by the owning process; holds its pid (for the error text)
    snapshot.json  {table: {doc_id: doc}} as of the last compaction (atomic rename),
                   one document per line so it loads without decoding them
                   (format: ``snapshot.py``); its header records the journal mark:
                   the journal's inode, length and CRC-32 when the snapshot was taken
    journal.log    one JSON line per acknowledged write since that snapshot (and, for a
                   while after a background compaction, the lines before its mark);
                   a line is a list of ops ``[table, doc_id, doc_or_null]``
                   (null = delete), so a multi-document batch is one line and
                   lands on disk all-or-nothing.
    *.tmp          a snapshot or journal being written; removed at open (a crash left it)

Durability: each write is a single ``os.write`` on an ``O_APPEND`` fd before the
call returns, so a process killed with SIGKILL loses nothing it acknowledged (the
data is in the kernel page cache).  Surviving power loss / kernel crash needs
``fsync=True``, which fsyncs the journal on every write (much slower).

Compaction (snapshot, then drop the journal lines it holds) costs O(data).  At open, at
close and on ``compact()`` it runs in the calling thread.  Once the journal reaches
``compact_every`` lines, or ``compaction_bytes()`` bytes (``compact_ratio`` times the
snapshot's size, and at least ``compact_min_bytes``), a write starts it in a background thread
instead, so the server's event loop never stalls for it (~0.2 s with 100k documents):

1. the write takes a shallow copy of each table (documents are immutable bytes, so that
   is a consistent snapshot of the state at the journal's current length, the *mark*),
   and hands it to the compaction thread;
2. the thread reads the marked bytes back from the journal for their CRC-32 (no write changes
   them; the store keeps no running CRC, which cost every write one in the event loop), encodes
   the copy, writes ``snapshot.json.tmp``, fsyncs it, renames it over ``snapshot.json`` and
   fsyncs the dir; meanwhile writes go on appending to the journal;
3. the first write after the thread is done (or ``close()``) copies the journal's lines
   after the mark into ``journal.log.tmp`` (fsynced with ``fsync=True``), renames it over
   ``journal.log`` and appends to that new file from then on.

One compaction runs at a time; ``compact()``, ``close()`` and a full rewrite wait for a
running one first.  A failed one is logged and retried ``compact_every`` lines (or
``compaction_bytes()`` bytes) later; the write that started it has already succeeded.  The thread
works only on its copies, the snapshot files and the journal's marked bytes; the lock is
released only after it has finished.

Crash windows (SIGKILL at any point loses no acknowledged write; power loss too with
``fsync=True``):

- before the snapshot rename: old snapshot + whole journal; the ``.tmp`` is removed;
- between the snapshot rename and the journal rename: new snapshot + whole journal.  The
  snapshot's mark names this journal file (inode) and content (length, CRC-32), so only
  the lines after the mark are replayed.  (Replaying all of them would give the same
  documents, the journal holding whole documents, but a document deleted and written again
  would move to the end of its table's order.);
- after the journal rename: new snapshot + the lines after the mark, in a new file whose
  inode is not the mark's, so all of it is replayed.  With ``fsync=True`` the dir is fsynced
  right after the rename (if that fails, before the next write is acknowledged), so no
  acknowledged write can be in a file that the dir does not name after a power loss.

A synchronous compaction replaces the journal the same way (by an empty file).  So the
file that replaces a marked journal is made while the marked one still exists (another
inode), and by the time the marked inode's number could be reused the snapshot holding
the mark has been replaced too: a mark never matches a journal it does not describe.

Not thread-safe: use one store from one thread (the server's event loop).
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as wait_for
from pathlib import Path
from typing import Any, Final

import orjson
from tinydb.storages import Storage

from simulator.memory import no_gc
from simulator.store.batch_scope import BatchScope
from simulator.store.dirlock import LOCK, DirLock
from simulator.store.errors import StoreCorruptError, StoreError, StoreLockedError
from simulator.store.files import (
    SNAPSHOT,
    close_quietly,
    encode_and_write_snapshot,
    fsync_dir,
    journal_mark,
    read_range,
    write_all,
    write_snapshot,
)
from simulator.store.journal_format import (
    Doc,
    Op,
    Tables,
    decode_line,
    encode_op,
    encode_tables,
)
from simulator.store.pending import MISSING, Batch, Compaction, Missing
from simulator.store.recovery import read_snapshot, replay_start
from simulator.store.snapshot import (
    INFO_TABLE,
    Encoded,
    JournalMark,
    compact_bytes,
    encode_snapshot,
    reheader,
)

__all__ = [
    "LOCK",
    "SNAPSHOT",
    "Doc",
    "JournalStorage",
    "Op",
    "StoreCorruptError",
    "StoreError",
    "StoreLockedError",
]

log = logging.getLogger(__name__)


JOURNAL: Final = "journal.log"
DEFAULT_COMPACT_EVERY: Final = 50_000
# Lines alone miss a journal of few, large lines (a document rewritten whole at every write):
# bytes bound it too.  Compacting once the journal holds as many bytes as the snapshot keeps
# the data dir under about twice its data and costs at most one snapshot byte written per
# journal byte; the floor keeps a small store from compacting every few writes.
DEFAULT_COMPACT_RATIO: Final = 1.0
DEFAULT_COMPACT_MIN_BYTES: Final = 16 * 1024 * 1024


class JournalStorage(Storage):
    """tinydb ``Storage`` keeping ``{table: {doc_id: doc}}`` in memory, journaled to disk.

    ``data_dir=None`` gives a purely in-memory storage (no files, no lock) for tests.

    Documents are held in memory as exactly the JSON bytes written to the journal, so
    memory always equals what a restart would replay (e.g. tuples become lists),
    callers can never alias them, and 50,000 transactions fit in tens of megabytes.
    """

    def __init__(
        self,
        data_dir: Path | None,
        *,
        fsync: bool = False,
        compact_every: int = DEFAULT_COMPACT_EVERY,
        compact_ratio: float = DEFAULT_COMPACT_RATIO,
        compact_min_bytes: int = DEFAULT_COMPACT_MIN_BYTES,
    ) -> None:
        if compact_every < 1:
            raise ValueError("compact_every must be >= 1")
        if not compact_ratio > 0 or compact_min_bytes < 1:
            raise ValueError("compact_ratio must be > 0 and compact_min_bytes >= 1")
        self._dir = None if data_dir is None else Path(data_dir)
        self._fsync = fsync
        self._compact_every = compact_every
        self._compact_ratio = compact_ratio
        self._compact_min_bytes = compact_min_bytes
        self._data: Encoded = {}
        # The open batch, or None. `Collection.put` writes into it directly (the store's hottest
        # path: a call less per write); its steps are `append`'s for one op.
        self._batch: Batch | None = None
        self._idle_batch = Batch()  # the one every outermost batch uses, empty between them
        self._lines = 0  # lines in the journal file
        self._compact_at = compact_every  # _lines value that starts a compaction
        self._snapshot_size = 0  # bytes of the snapshot in place
        self._compact_bytes_at = compact_min_bytes  # _size value that starts a compaction
        self._size = 0  # journal bytes; the offset to roll back to on a failed write
        self._inode = 0  # the journal file's
        self._fd: int | None = None
        self._compaction: Compaction | None = None  # running in the background
        self._executor: ThreadPoolExecutor | None = None  # its thread, made at the first one
        # fsync mode: a replaced journal's directory entry is not yet durable (retried per write).
        self._dir_unsynced = False
        self._lock: DirLock | None = None
        self._closed = False
        self._broken: str | None = None
        self._scope = BatchScope(self)  # what every batch() hands out: it holds no state
        # Called with (table, doc_id, restored doc or None) for each write a rollback undoes, so
        # in-memory indexes beside the store can follow it.
        self.rollback_listeners: list[Callable[[str, str, Doc | None], None]] = []
        if self._dir is not None:
            self._open_files(self._dir)

    # -- tinydb Storage interface ------------------------------------------------

    def read(self) -> Tables:
        """A decoded copy of everything (tinydb's read path; O(data), never on a hot path)."""
        return {name: self.decoded(name) for name in self._data}

    def write(self, data: dict[str, dict[str, Any]]) -> None:
        """Replace everything (tinydb's full-rewrite path): O(data), for rare use only."""
        self._check_writable()
        if self._batch is not None:
            raise StoreError("a full rewrite is not allowed inside a batch")
        self.write_encoded(encode_tables(orjson.loads(orjson.dumps(data))))  # validated as JSON

    def export(self) -> Encoded:
        """A consistent copy of everything as stored bytes: a shallow copy of each table (the
        documents are immutable bytes), O(documents) with no encoding."""
        return {name: dict(docs) for name, docs in self._data.items() if docs}

    def write_encoded(self, new_data: Encoded, snapshot: bytes | None = None) -> None:
        """Replace everything by documents already encoded (from ``export`` or a snapshot
        file); the caller hands over `new_data`, which becomes the store's own.  `snapshot`: a
        snapshot's bytes (``encode_snapshot``'s format) holding exactly `new_data`, written in
        place of encoding it again."""
        self._check_writable()
        if self._batch is not None:
            raise StoreError("a full rewrite is not allowed inside a batch")
        if INFO_TABLE in new_data:
            raise ValueError(f"the table name {INFO_TABLE!r} is reserved")
        if self._dir is None:
            self._data = new_data
            return
        self._wait_for_compaction()
        mark = self._mark()
        pieces = encode_snapshot(new_data, mark) if snapshot is None else reheader(snapshot, mark)
        write_snapshot(self._dir, pieces)
        self._snapshot_size = sum(map(len, pieces))
        self._data = new_data  # what a restart reads from now on
        try:
            self._trim(mark.size, self._lines)
        except OSError:  # the snapshot's mark tells a restart to skip the journal's lines
            log.exception("emptying the journal after a full rewrite failed")

    def close(self) -> None:
        """Wait for a background compaction, compact, close files and release the lock.

        Idempotent."""
        if self._closed:
            return
        if self._batch is not None:
            raise StoreError("cannot close the store inside a batch")
        try:
            self._wait_for_compaction()
            if self._fd is not None and self._lines and self._broken is None:
                self.compact()
        finally:
            if self._executor is not None:
                # Never release the lock while the thread may still write into the dir.
                self._executor.shutdown(wait=True)
                self._executor = None
            self._closed = True
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            if self._lock is not None:
                self._lock.release()
                self._lock = None

    # -- data access used by Collection ------------------------------------------

    def table_data(self, name: str) -> dict[str, bytes]:
        """The live encoded docs of one table (an empty dict if it has none yet)."""
        return self._data.get(name, {})

    def decoded(self, name: str) -> dict[str, Doc]:
        """Private decoded copies of one table's docs, in insertion order. O(n)."""
        with no_gc():
            return {doc_id: orjson.loads(raw) for doc_id, raw in self._data.get(name, {}).items()}

    @property
    def in_batch(self) -> bool:
        return self._batch is not None

    def append(self, ops: Sequence[Op]) -> None:
        """Apply ``ops`` and make them durable as ONE journal line (all or nothing).

        Inside a batch the ops are applied to memory at once and written when the
        outermost batch exits.  Raises ``TypeError`` for non-JSON values before
        anything changes.
        """
        self._check_writable()
        encoded = [encode_op(op) for op in ops]
        if not encoded:
            return
        if self._batch is not None:
            for (table, doc_id, _), (fragment, doc) in zip(ops, encoded, strict=True):
                self._batch.undo.append((table, doc_id, self._apply(table, doc_id, doc)))
                self._batch.fragments.append(fragment)
            return
        # Disk first, then memory: if the write fails nothing has changed.
        self._write_line([fragment for fragment, _ in encoded])
        for (table, doc_id, _), (_, doc) in zip(ops, encoded, strict=True):
            self._apply(table, doc_id, doc)
        self._maybe_compact()

    def batch(self) -> BatchScope:
        """Context manager grouping writes into one journal line; nested ones join."""
        if self._closed or self._broken is not None:
            self._check_writable()
        return self._scope

    def compact(self) -> None:
        """Write a snapshot of memory and empty the journal, in this thread, before returning.

        O(data).  Waits for a compaction running in the background first (this one supersedes it).
        """
        if self._batch is not None:
            raise StoreError("cannot compact inside a batch (it would persist uncommitted writes)")
        if self._dir is None:
            return
        self._check_writable()
        self._wait_for_compaction()
        mark = self._mark()
        pieces = encode_snapshot(self._data, mark)
        write_snapshot(self._dir, pieces)
        self._snapshot_size = sum(map(len, pieces))
        self._trim(mark.size, self._lines)

    # -- batches (``BatchScope`` opens and closes them) -----------------------------

    def _undo(self, batch: Batch, mark: int) -> None:
        while len(batch.undo) > mark:
            table, doc_id, previous = batch.undo.pop()
            docs = self._data.setdefault(table, {})
            if isinstance(previous, Missing):
                docs.pop(doc_id, None)
            else:
                # A deleted doc comes back at the end of the insertion order.
                docs[doc_id] = previous
            for listener in self.rollback_listeners:
                restored = None if isinstance(previous, Missing) else orjson.loads(previous)
                listener(table, doc_id, restored)
        del batch.fragments[mark:]

    # -- internals ---------------------------------------------------------------

    def _apply(self, table: str, doc_id: str, doc: bytes | None) -> bytes | Missing:
        docs = self._data.get(table)
        if docs is None:
            docs = self._data[table] = {}
        previous = docs.get(doc_id, MISSING)
        if doc is None:
            docs.pop(doc_id, None)
        else:
            docs[doc_id] = doc
        return previous

    def _check_writable(self) -> None:
        if self._closed:
            raise StoreError("the store is closed")
        if self._broken is not None:
            raise StoreError(f"the store is unusable after a failed write: {self._broken}")

    def _open_files(self, data_dir: Path) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self._lock = DirLock(data_dir)
        try:
            for leftover in (SNAPSHOT, JOURNAL):  # of a compaction cut short by a crash
                (data_dir / (leftover + ".tmp")).unlink(missing_ok=True)
            legacy, covered = self._load_snapshot(data_dir / SNAPSHOT)
            journal = data_dir / JOURNAL
            self._fd = os.open(journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            self._inode = os.fstat(self._fd).st_ino
            skipped = self._replay(journal, covered)
            if self._fsync:
                fsync_dir(data_dir)  # make the journal's directory entry durable
            if self._lines or skipped or legacy:
                # Start with an empty journal (amortised over the run), and a snapshot written
                # by an earlier version becomes one that loads without decoding its documents.
                self.compact()
        except BaseException:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            self._lock.release()
            self._lock = None
            raise

    def _load_snapshot(self, path: Path) -> tuple[bool, JournalMark | None]:
        """Load the snapshot, if any: (written by an earlier version: rewrite it, its journal
        mark)."""
        loaded = read_snapshot(path)
        if loaded is None:
            return False, None
        self._data, legacy, covered, self._snapshot_size = loaded
        self._compact_bytes_at = self.compaction_bytes()
        return legacy, covered

    def _replay(self, path: Path, covered: JournalMark | None) -> bool:
        """Apply the journal's lines that the snapshot does not hold; True if it holds some."""
        assert self._fd is not None
        raw = path.read_bytes()
        end = raw.rfind(b"\n") + 1
        if end < len(raw):
            # A crash in the middle of the single write() of a line: that write was
            # never acknowledged, so dropping it loses nothing.  Truncate so later
            # appends do not glue onto the fragment.
            log.warning("%s: dropping a torn last line (%d bytes)", path, len(raw) - end)
            os.ftruncate(self._fd, end)
        start = replay_start(raw, end, covered, self._inode)
        lines = raw[start:end].split(b"\n")[:-1]
        first = raw.count(b"\n", 0, start) + 1
        with no_gc():
            for lineno, line in enumerate(lines, start=first):
                for table, doc_id, doc in decode_line(path, lineno, line):
                    self._apply(table, doc_id, None if doc is None else compact_bytes(doc))
        self._lines = len(lines)
        self._size = end
        return start > 0

    def _write_line(self, fragments: list[bytes]) -> None:
        """Append one line with a single write(): it is on disk whole or not at all."""
        fd = self._fd
        if fd is None:  # in-memory store
            return
        line = b"[" + b",".join(fragments) + b"]\n"
        try:
            written = os.write(fd, line)
            if written != len(line):
                raise OSError(errno.EIO, f"short write to journal ({written}/{len(line)})")
            if self._fsync:
                os.fsync(fd)
                if self._dir_unsynced:  # the journal was replaced: the file must be the one found
                    assert self._dir is not None
                    fsync_dir(self._dir)
                    self._dir_unsynced = False
        except BaseException as exc:
            # Cut any partial line off so the journal stays replayable; if even that
            # fails, refuse further writes rather than risk a corrupt middle line.
            try:
                os.ftruncate(fd, self._size)
            except OSError as trunc_exc:
                self._broken = f"{exc!r}; truncate failed: {trunc_exc!r}"
            raise
        self._size += len(line)
        self._lines += 1

    def _maybe_compact(self) -> None:
        """After each write: start a background compaction when due, finish one that is done."""
        if self._compaction is None:
            due = self._lines >= self._compact_at or self._size >= self._compact_bytes_at
            if due and self._dir is not None:
                self._start_compaction()
        elif self._compaction.future.done():
            self._finish_compaction()

    def _mark(self) -> JournalMark:
        """Where the journal stands now (call outside a batch: memory = journal then); O(journal),
        its CRC read back from the file, for a snapshot written in this thread."""
        assert self._dir is not None
        return journal_mark(self._dir / JOURNAL, self._inode, self._size)

    def _start_compaction(self) -> None:
        """Write a snapshot of the state as of now in the compaction thread.

        Costs this thread one shallow copy of each table (the documents are immutable bytes, so
        the copies are a consistent snapshot) while writes go on appending to the journal.
        """
        assert self._dir is not None and self._batch is None
        tables = {name: dict(docs) for name, docs in self._data.items()}
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="store-compaction")
        try:
            # The thread reads the marked bytes' CRC back from the journal, off the event loop.
            future = self._executor.submit(
                encode_and_write_snapshot,
                self._dir,
                tables,
                self._dir / JOURNAL,
                self._inode,
                self._size,
            )
        except RuntimeError:  # the interpreter is shutting down: close() compacts
            log.warning("store compaction not started: the interpreter is exiting")
            self._retry_later()
            return
        self._compaction = Compaction(future, self._size, self._lines)

    def _finish_compaction(self) -> None:
        """The background snapshot is in place: drop the lines it holds from the journal."""
        compaction, self._compaction = self._compaction, None
        assert compaction is not None
        error = compaction.future.exception()
        if error is None:
            try:
                assert self._dir is not None
                self._snapshot_size = (self._dir / SNAPSHOT).stat().st_size
                self._trim(compaction.size, compaction.lines)
                return
            except OSError as exc:
                error = exc
        # The journal still holds every write (and a snapshot that made it into place says
        # which of them it holds), so nothing fails; the journal simply keeps growing until a
        # retry works.
        log.error("store compaction failed; will retry", exc_info=error)
        self._retry_later()

    def compaction_bytes(self) -> int:
        """The journal size at which a write starts a compaction: `compact_ratio` times the
        snapshot's size, and at least `compact_min_bytes`."""
        return max(self._compact_min_bytes, int(self._compact_ratio * self._snapshot_size))

    def _retry_later(self) -> None:
        """A compaction could not start or finish: try again as many lines or bytes later as
        would start one after a compaction."""
        self._compact_at = self._lines + self._compact_every
        self._compact_bytes_at = self._size + self.compaction_bytes()

    def _wait_for_compaction(self) -> None:
        """Let a background compaction finish, and forget it (the caller supersedes it)."""
        compaction, self._compaction = self._compaction, None
        if compaction is None:
            return
        wait_for([compaction.future])
        if compaction.future.exception() is not None:
            log.error("store compaction failed", exc_info=compaction.future.exception())

    def _trim(self, size: int, lines: int) -> None:
        """Replace the journal by its lines after byte `size` (a snapshot marking its first `size`
        bytes is in place); `lines`: the lines those bytes hold.

        The tail goes into a new file renamed over the journal, never cut out in place: a crash
        leaves either the whole old journal or the tail, and the new file has a new inode, which
        tells a restart that the snapshot's mark is not about it.  The new file's fd becomes
        the journal's, so no write can go to a journal that is no longer in the dir.
        """
        assert self._dir is not None and self._fd is not None and self._batch is None
        journal = self._dir / JOURNAL
        tmp = self._dir / (JOURNAL + ".tmp")
        tail = read_range(journal, size, self._size)
        fd = os.open(tmp, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            write_all(fd, tail)
            if self._fsync:
                os.fsync(fd)
            os.replace(tmp, journal)
        except BaseException:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        old, self._fd = self._fd, fd
        self._inode = os.fstat(fd).st_ino
        self._size = len(tail)
        self._lines -= lines
        self._compact_at = self._compact_every
        self._compact_bytes_at = self.compaction_bytes()
        if self._executor is None:
            close_quietly(old)
        else:  # its last close frees the file's pages: milliseconds, which the loop need not wait
            self._executor.submit(close_quietly, old)
        if self._fsync:
            try:
                fsync_dir(self._dir)
            except OSError:
                log.exception("fsync of the data dir failed; retried at the next write")
                self._dir_unsynced = True
