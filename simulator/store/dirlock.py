"""The data dir's lock: one server per data dir."""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path
from typing import Final

from simulator.store.errors import StoreLockedError

LOCK: Final = "LOCK"


class DirLock:
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
            pid = read_pid(fd)
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise StoreLockedError(data_dir, pid) from None
            raise
        owner = f"{os.getpid()}\n".encode()
        os.pwrite(fd, owner, 0)
        # Cut what a longer pid left only when there is some: truncating a file that has blocks
        # costs milliseconds on ext4, on every open (a namespace's world opens its store each
        # time it is loaded).
        if os.fstat(fd).st_size > len(owner):
            os.ftruncate(fd, len(owner))
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def read_pid(fd: int) -> int | None:
    try:
        return int(os.pread(fd, 32, 0).decode().strip())
    except (OSError, ValueError):
        return None
