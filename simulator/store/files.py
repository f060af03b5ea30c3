"""The store's file operations: a snapshot put in place atomically and durably, whole writes, byte
ranges and directory fsyncs. The compaction thread runs `encode_and_write_snapshot`, which touches
nothing but its arguments and the snapshot files."""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import secrets
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from simulator.store.snapshot import Encoded, JournalMark, encode_snapshot

log = logging.getLogger("simulator.store.journal")

SNAPSHOT: Final = "snapshot.json"
TMP_SUFFIX: Final = ".tmp"  # a file being written atomically (write_atomically)


_CRC_CHUNK: Final = 1 << 20


def encode_and_write_snapshot(
    data_dir: Path, tables: Encoded, journal: Path, inode: int, size: int
) -> None:
    """The compaction thread's work: it touches nothing but its arguments and the snapshot files,
    and reads the journal's first `size` bytes (which no write changes) for the snapshot's mark."""
    mark = journal_mark(journal, inode, size)
    write_snapshot(data_dir, encode_snapshot(tables, mark, pause=let_the_loop_run))


def journal_mark(journal: Path, inode: int, size: int) -> JournalMark:
    """The mark of the journal's first `size` bytes, their CRC-32 read back from the file.

    The store keeps no running CRC: one per write was the CRC of every journal line in the
    event loop (0.7% of a `POST /payments`), for the few marks a compaction takes. OSError if
    `journal` is no longer the file `inode` names (a snapshot must never mark another one) or
    is shorter than `size`."""
    crc = 0
    fd = os.open(journal, os.O_RDONLY)
    try:
        if os.fstat(fd).st_ino != inode:
            raise OSError(errno.ESTALE, f"{journal} was replaced while a snapshot was marked")
        at = 0
        while at < size:
            part = os.pread(fd, min(_CRC_CHUNK, size - at), at)
            if not part:
                raise OSError(errno.EIO, f"{journal} is shorter than the store wrote ({at}/{size})")
            crc = zlib.crc32(part, crc)
            at += len(part)
    finally:
        os.close(fd)
    return JournalMark(inode, size, crc)


def let_the_loop_run() -> None:
    # A sleep, not sleep(0): that gives up the GIL for so short a time that this thread
    # mostly takes it back before the waiting one wakes.
    time.sleep(0.0001)


def write_snapshot(data_dir: Path, pieces: Sequence[bytes]) -> None:
    """Put a snapshot in place atomically and durably (fsync, rename, fsync the dir)."""
    write_atomically(data_dir / SNAPSHOT, pieces)


def write_atomically(path: Path, pieces: Sequence[bytes]) -> None:
    """Write `path` whole or not at all, durably: `<name>.tmp` beside it, fsynced, renamed over
    it, the directory fsynced. A failure leaves the old file and no temporary one."""
    tmp = path.with_name(path.name + TMP_SUFFIX)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            for piece in pieces:
                write_all(fd, piece)
            os.fsync(fd)  # always: the journal is about to lose the lines it holds
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def close_quietly(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        log.exception("closing the replaced journal failed")


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def read_range(path: Path, start: int, end: int) -> bytes:
    """Bytes [start, end) of the file; OSError if it is shorter."""
    if start == end:
        return b""
    fd = os.open(path, os.O_RDONLY)
    try:
        parts = []
        at = start
        while at < end:
            part = os.pread(fd, end - at, at)
            if not part:
                raise OSError(errno.EIO, f"{path} is shorter than the store wrote ({at}/{end})")
            parts.append(part)
            at += len(part)
    finally:
        os.close(fd)
    return b"".join(parts)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_or_make_secret(path: Path) -> bytes:
    """The 32-byte secret kept (hex) in `path`, made on first use. Readable by its owner only: it
    derives credentials. When two processes make it at once, the first file linked wins and
    both use it (a rename would let the second replace a secret the first already handed out)."""
    with contextlib.suppress(FileNotFoundError):
        return bytes.fromhex(path.read_text().strip())
    path.parent.mkdir(parents=True, exist_ok=True)
    secret = secrets.token_bytes(32)
    temporary = path.with_name(f"{path.name}.{secrets.token_hex(4)}{TMP_SUFFIX}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(secret.hex())
    try:
        os.link(temporary, path)
    except FileExistsError:
        secret = bytes.fromhex(path.read_text().strip())
    finally:
        temporary.unlink()
    return secret
