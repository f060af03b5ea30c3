"""The team server's audit trail: one JSON line per management action or world-changing control
call, appended with one `write` before the call is answered (in the kernel's hands then: a
kill -9 loses no acknowledged entry) and fsynced too with `--fsync` (power loss), as the store
does; a line cut short by a crash is dropped when the file is next opened. Bounded: past
`max_bytes` the file becomes `audit.1.jsonl` (the one before it is dropped) and a new one
starts.

Behind `--workers` every worker appends to the same file (the team directory they share): each
append takes an exclusive `flock` of `audit.lock`, and a worker whose file was rotated by a
sibling reopens it first, so lines never interleave and none lands in the rotated file late."""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from simulator.jsonio import dumps, loads

FILE = "audit.jsonl"
ROTATED = "audit.1.jsonl"
LOCK = "audit.lock"
MAX_BYTES = 4 * 1024 * 1024
IN_MEMORY = 10_000  # entries kept without a data dir


def iso_ms(seconds: float) -> str:
    whole = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    return f"{whole}.{int(seconds * 1000) % 1000:03d}Z"


class AuditLog:
    def __init__(
        self, directory: Path | None, *, max_bytes: int = MAX_BYTES, fsync: bool = False
    ) -> None:
        self._directory = directory
        self._fsync = fsync
        self._max_bytes = max_bytes
        self._memory: deque[dict[str, Any]] = deque(maxlen=IN_MEMORY)
        self._fd: int | None = None
        self._size = 0
        self._lock: int | None = None
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)
            self._lock = os.open(directory / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
            with self._held():
                self._open()

    @contextlib.contextmanager
    def _held(self) -> Iterator[None]:
        assert self._lock is not None
        fcntl.flock(self._lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._lock, fcntl.LOCK_UN)

    def _open(self) -> None:
        assert self._directory is not None
        path = self._directory / FILE
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            # A line cut short by a crash (never acknowledged): cut it off, so that the next
            # line does not join it.
            tail = os.pread(fd, min(size, 1 << 16), max(0, size - (1 << 16)))
            keep = size - len(tail) + tail.rfind(b"\n") + 1 if b"\n" in tail else 0
            os.ftruncate(fd, keep)
            os.fsync(fd)
            size = keep
        self._fd, self._size = fd, size

    def append(self, entry: dict[str, Any]) -> None:
        """Durable once this returns."""
        if self._fd is None:
            self._memory.append(entry)
            return
        line = dumps(entry) + b"\n"
        with self._held():
            self._follow_rotation()
            assert self._fd is not None
            os.write(self._fd, line)
            if self._fsync:
                os.fsync(self._fd)
            self._size = os.fstat(self._fd).st_size  # a sibling's lines count too
            if self._size >= self._max_bytes:
                self._rotate()

    def _follow_rotation(self) -> None:
        """Reopen the file if a sibling worker rotated it since this one last wrote."""
        assert self._directory is not None and self._fd is not None
        try:
            current = os.stat(self._directory / FILE).st_ino
        except FileNotFoundError:
            current = -1
        if current != os.fstat(self._fd).st_ino:
            os.close(self._fd)
            self._fd = None
            self._open()

    def _rotate(self) -> None:
        assert self._directory is not None and self._fd is not None
        os.close(self._fd)
        os.replace(self._directory / FILE, self._directory / ROTATED)
        self._fd = None
        self._open()

    def entries(self) -> Iterator[dict[str, Any]]:
        """Every entry kept, oldest first."""
        if self._directory is None:
            yield from list(self._memory)
            return
        for name in (ROTATED, FILE):
            with contextlib.suppress(FileNotFoundError), open(self._directory / name, "rb") as f:
                for line in f:
                    with contextlib.suppress(ValueError):
                        yield loads(line)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None
