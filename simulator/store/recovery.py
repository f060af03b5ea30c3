"""What a store opening on a data dir finds: the snapshot, and where the journal's replay starts."""

from __future__ import annotations

import zlib
from pathlib import Path

from simulator.store.errors import StoreCorruptError
from simulator.store.snapshot import Encoded, JournalMark, SnapshotError, decode_snapshot


def read_snapshot(path: Path) -> tuple[Encoded, bool, JournalMark | None, int] | None:
    """The snapshot's tables, whether an earlier version wrote it (rewrite it), its journal mark
    and its size in bytes; None with no snapshot."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        data, legacy, covered = decode_snapshot(raw)
    except SnapshotError as exc:
        raise StoreCorruptError(
            f"{path} is corrupt: {exc}; restore the data dir from a backup"
        ) from None
    return data, legacy, covered, len(raw)


def replay_start(raw: bytes, end: int, covered: JournalMark | None, inode: int) -> int:
    """The journal byte its replay starts at (`raw[:end]` is its whole lines).

    The store stopped after a snapshot was put in place and before the journal lost the lines
    that the snapshot holds (its mark names this file and its first bytes): skip them.
    Replaying them too would give the same documents, but one deleted and written again would
    move to the end of its table's order."""
    if (
        covered is not None
        and covered.inode == inode
        and 0 < covered.size <= end
        and raw[covered.size - 1] == ord("\n")
        and zlib.crc32(memoryview(raw)[: covered.size]) == covered.crc32
    ):
        return covered.size
    return 0
