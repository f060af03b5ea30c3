"""What the journal holds while it is not yet on disk: an open batch (its encoded ops and its undo
log) and a compaction running in the background."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Final


class Missing:
    """Undo-log marker: the document did not exist before the write."""


MISSING: Final = Missing()


class Batch:
    """Pending state of an open batch: encoded ops to write, and an undo log. A storage has one,
    emptied when its outermost batch ends and used again by the next."""

    __slots__ = ("fragments", "marks", "undo")

    def __init__(self) -> None:
        self.fragments: list[bytes] = []
        # (table, doc_id, previous doc or MISSING), in application order.
        self.undo: list[tuple[str, str, bytes | Missing]] = []
        # Where each open nested scope began in `undo`, innermost last (the outermost: at 0).
        self.marks: list[int] = []


class Compaction:
    """A snapshot being written by the compaction thread, of the state at journal byte `size`."""

    __slots__ = ("future", "lines", "size")

    def __init__(self, future: Future[None], size: int, lines: int) -> None:
        self.future = future
        self.size = size  # the journal's bytes that the snapshot holds (its mark)
        self.lines = lines  # journal lines up to the mark
