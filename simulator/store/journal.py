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
                   (format: ``snapshot.py``)
    journal.log    one JSON line per acknowledged write since that snapshot;
                   a line is a list of ops ``[table, doc_id, doc_or_null]``
                   (null = delete), so a multi-document batch is one line and
                   lands on disk all-or-nothing.

Durability: each write is a single ``os.write`` on an ``O_APPEND`` fd before the
call returns, so a process killed with SIGKILL loses nothing it acknowledged (the
data is in the kernel page cache).  Surviving power loss / kernel crash needs
``fsync=True``, which fsyncs the journal on every write (much slower).

Compaction (snapshot + truncate journal) costs O(data), so it is kept off the
common path: it runs at open, at close and once the journal exceeds
``compact_every`` lines.  A crash between the snapshot rename and the journal
truncate is harmless: the journal holds whole documents, so replaying it over the
newer snapshot is idempotent.

Not thread-safe: use one store from one thread (the server's event loop).
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Final

import orjson
from tinydb.storages import Storage

from simulator.store.snapshot import (
    INFO_TABLE,
    Encoded,
    SnapshotError,
    compact_bytes,
    decode_snapshot,
    encode_snapshot,
    no_gc,
)

__all__ = [
    "Doc",
    "JournalStorage",
    "Op",
    "StoreCorruptError",
    "StoreError",
    "StoreLockedError",
]

log = logging.getLogger(__name__)

Doc = dict[str, Any]
#: One write: (table, doc_id, doc); ``doc=None`` deletes the document.
Op = tuple[str, str, Doc | None]
Tables = dict[str, dict[str, Doc]]

SNAPSHOT: Final = "snapshot.json"
JOURNAL: Final = "journal.log"
LOCK: Final = "LOCK"
DEFAULT_COMPACT_EVERY: Final = 50_000


class StoreError(Exception):
    """Base class of the store's own errors."""


class StoreLockedError(StoreError):
    """The data dir is already opened by another process (or another Store)."""

    def __init__(self, data_dir: Path, pid: int | None) -> None:
        self.data_dir = data_dir
        self.pid = pid
        who = f"pid {pid}" if pid is not None else "pid unknown"
        super().__init__(
            f"data dir {data_dir} is in use by another payorch server ({who}); "
            "stop it or pass --data-dir"
        )


class StoreCorruptError(StoreError):
    """The snapshot or a journal line (other than a torn last one) is unreadable."""


class _DirLock:
    """Exclusive ``flock`` on ``data_dir/LOCK``.

    flock (not a pid file) because the kernel drops it when the holder dies, even by
    SIGKILL, so a crashed server never leaves a stale lock behind.  The pid written
    into the file is informational only (it makes the error message actionable).
    """

    def __init__(self, data_dir: Path) -> None:
        path = data_dir / LOCK
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            pid = _read_pid(fd)
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise StoreLockedError(data_dir, pid) from None
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def _read_pid(fd: int) -> int | None:
    try:
        return int(os.pread(fd, 32, 0).decode().strip())
    except (OSError, ValueError):
        return None


class _Missing:
    """Undo-log marker: the document did not exist before the write."""


_MISSING: Final = _Missing()


class _Batch:
    """Pending state of an open batch: encoded ops to write, and an undo log."""

    __slots__ = ("fragments", "undo")

    def __init__(self) -> None:
        self.fragments: list[bytes] = []
        # (table, doc_id, previous doc or _MISSING), in application order.
        self.undo: list[tuple[str, str, bytes | _Missing]] = []


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
    ) -> None:
        if compact_every < 1:
            raise ValueError("compact_every must be >= 1")
        self._dir = None if data_dir is None else Path(data_dir)
        self._fsync = fsync
        self._compact_every = compact_every
        self._data: Encoded = {}
        self._batch: _Batch | None = None
        self._batch_depth = 0
        self._lines = 0  # journal lines since the last snapshot
        self._compact_at = compact_every  # _lines value that triggers compaction
        self._size = 0  # journal bytes; the offset to roll back to on a failed write
        self._fd: int | None = None
        self._lock: _DirLock | None = None
        self._closed = False
        self._broken: str | None = None
        #: Bumped on every in-memory change; lets collections drop tinydb's query cache.
        self.generation = 0
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
        new_data = _encode_tables(orjson.loads(orjson.dumps(data)))  # validated as JSON
        if INFO_TABLE in new_data:
            raise ValueError(f"the table name {INFO_TABLE!r} is reserved")
        if self._dir is not None:
            self._write_snapshot(encode_snapshot(new_data))
        self._data = new_data
        self.generation += 1

    def close(self) -> None:
        """Compact, close files and release the lock. Idempotent."""
        if self._closed:
            return
        if self._batch is not None:
            raise StoreError("cannot close the store inside a batch")
        try:
            if self._fd is not None and self._lines and self._broken is None:
                self.compact()
        finally:
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
        encoded = [_encode(op) for op in ops]
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

    def batch(self) -> _BatchScope:
        """Context manager grouping writes into one journal line; nested ones join."""
        self._check_writable()
        return _BatchScope(self)

    def compact(self) -> None:
        """Write a snapshot of memory and empty the journal. O(data)."""
        if self._batch is not None:
            raise StoreError("cannot compact inside a batch (it would persist uncommitted writes)")
        if self._dir is None:
            return
        self._check_writable()
        self._write_snapshot(encode_snapshot(self._data))

    # -- batches -----------------------------------------------------------------

    def _begin(self) -> int:
        if self._batch is None:
            self._batch = _Batch()
        self._batch_depth += 1
        return len(self._batch.undo)

    def _end(self, mark: int, failed: bool) -> None:
        batch = self._batch
        assert batch is not None
        self._batch_depth -= 1
        if failed:
            # Undo only this (possibly nested) scope's writes: a caller that catches
            # the exception inside an outer batch keeps the outer writes.
            self._undo(batch, mark)
        if self._batch_depth:
            return
        self._batch = None
        if failed or not batch.fragments:
            return
        try:
            self._write_line(batch.fragments)
        except BaseException:
            self._undo(batch, 0)
            raise
        self._maybe_compact()

    def _undo(self, batch: _Batch, mark: int) -> None:
        while len(batch.undo) > mark:
            table, doc_id, previous = batch.undo.pop()
            docs = self._data.setdefault(table, {})
            if isinstance(previous, _Missing):
                docs.pop(doc_id, None)
            else:
                # A deleted doc comes back at the end of the insertion order.
                docs[doc_id] = previous
            for listener in self.rollback_listeners:
                restored = None if isinstance(previous, _Missing) else orjson.loads(previous)
                listener(table, doc_id, restored)
        del batch.fragments[mark:]
        self.generation += 1

    # -- internals ---------------------------------------------------------------

    def _apply(self, table: str, doc_id: str, doc: bytes | None) -> bytes | _Missing:
        docs = self._data.get(table)
        if docs is None:
            docs = self._data[table] = {}
        previous = docs.get(doc_id, _MISSING)
        if doc is None:
            docs.pop(doc_id, None)
        else:
            docs[doc_id] = doc
        self.generation += 1
        return previous

    def _check_writable(self) -> None:
        if self._closed:
            raise StoreError("the store is closed")
        if self._broken is not None:
            raise StoreError(f"the store is unusable after a failed write: {self._broken}")

    def _open_files(self, data_dir: Path) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self._lock = _DirLock(data_dir)
        try:
            (data_dir / (SNAPSHOT + ".tmp")).unlink(missing_ok=True)  # crashed compaction
            legacy = self._load_snapshot(data_dir / SNAPSHOT)
            journal = data_dir / JOURNAL
            self._fd = os.open(journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            self._replay(journal)
            if self._fsync:
                _fsync_dir(data_dir)  # make the journal's directory entry durable
            if self._lines or legacy:
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

    def _load_snapshot(self, path: Path) -> bool:
        """Load the snapshot, if any; True if an earlier version wrote it (rewrite it)."""
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return False
        try:
            self._data, legacy = decode_snapshot(raw)
        except SnapshotError as exc:
            raise StoreCorruptError(
                f"{path} is corrupt: {exc}; restore the data dir from a backup"
            ) from None
        return legacy

    def _replay(self, path: Path) -> None:
        assert self._fd is not None
        raw = path.read_bytes()
        end = raw.rfind(b"\n") + 1
        if end < len(raw):
            # A crash in the middle of the single write() of a line: that write was
            # never acknowledged, so dropping it loses nothing.  Truncate so later
            # appends do not glue onto the fragment.
            log.warning("%s: dropping a torn last line (%d bytes)", path, len(raw) - end)
            os.ftruncate(self._fd, end)
        lines = raw[:end].split(b"\n")[:-1]
        with no_gc():
            for lineno, line in enumerate(lines, start=1):
                for table, doc_id, doc in _decode_line(path, lineno, line):
                    self._apply(table, doc_id, None if doc is None else compact_bytes(doc))
        self._lines = len(lines)
        self._size = end

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
        if self._lines < self._compact_at:
            return
        try:
            self.compact()
        except OSError:
            # The write that triggered this is already durable in the journal, so
            # don't fail it; the journal simply keeps growing until a retry works.
            log.exception("store compaction failed; will retry")
            self._compact_at = self._lines + self._compact_every

    def _write_snapshot(self, pieces: Sequence[bytes]) -> None:
        assert self._dir is not None and self._fd is not None
        path = self._dir / SNAPSHOT
        tmp = self._dir / (SNAPSHOT + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            for piece in pieces:
                view = memoryview(piece)
                while view:
                    view = view[os.write(fd, view) :]
            os.fsync(fd)  # always: the journal is about to be emptied
        finally:
            os.close(fd)
        os.replace(tmp, path)
        _fsync_dir(self._dir)
        # Only now is it safe to drop the journal.  A crash before this point leaves
        # snapshot + old journal, whose replay is idempotent (whole-doc ops).
        os.ftruncate(self._fd, 0)
        if self._fsync:
            os.fsync(self._fd)
        self._lines = 0
        self._size = 0
        self._compact_at = self._compact_every


class _BatchScope:
    """``with storage.batch():`` — see ``Store.batch``."""

    def __init__(self, storage: JournalStorage) -> None:
        self._storage = storage
        self._mark = 0

    def __enter__(self) -> None:
        self._mark = self._storage._begin()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._storage._end(self._mark, failed=exc_type is not None)


def _encode_tables(data: Tables) -> Encoded:
    return {
        name: {doc_id: compact_bytes(doc) for doc_id, doc in docs.items()}
        for name, docs in data.items()
    }


def _encode(op: Op) -> tuple[bytes, bytes | None]:
    """Serialise one op: its journal fragment and the doc's own bytes (kept in memory)."""
    table, doc_id, doc = op
    if not isinstance(table, str) or not isinstance(doc_id, str):
        raise TypeError(f"table and doc_id must be str, got {table!r}, {doc_id!r}")
    if table == INFO_TABLE:
        raise ValueError(f"the table name {INFO_TABLE!r} is reserved")
    if doc is not None and not isinstance(doc, dict):
        raise TypeError(f"a document must be a dict, got {type(doc).__name__}")
    raw = None if doc is None else compact_bytes(doc)  # TypeError on non-JSON values
    head = orjson.dumps([table, doc_id])[:-1]
    fragment = head + b"," + (b"null" if raw is None else raw) + b"]"
    return fragment, raw


def _decode_line(path: Path, lineno: int, line: bytes) -> list[Op]:
    """Parse and validate a whole line before any of it is applied."""

    def corrupt(why: str) -> StoreCorruptError:
        return StoreCorruptError(
            f"{path}: line {lineno} is corrupt ({why}); only a torn last line is "
            "recovered automatically; restore the data dir from a backup or remove "
            "the line by hand"
        )

    try:
        ops = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise corrupt(str(exc)) from None
    if not isinstance(ops, list) or not ops:
        raise corrupt("not a list of ops")
    decoded: list[Op] = []
    for op in ops:
        if not (
            isinstance(op, list)
            and len(op) == 3
            and isinstance(op[0], str)
            and isinstance(op[1], str)
            and (op[2] is None or isinstance(op[2], dict))
        ):
            raise corrupt(f"bad op {op!r:.80}")
        decoded.append((op[0], op[1], op[2]))
    return decoded


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
