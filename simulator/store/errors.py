"""The store's own errors."""

from __future__ import annotations

from pathlib import Path

__all__ = ["StoreCorruptError", "StoreError", "StoreLockedError"]


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
