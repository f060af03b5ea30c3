"""Holding many objects in memory cheaply: the one bounded cache and the one GC pause.

It imports nothing of the simulator, so the domain, the store and the HTTP edge all use it."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


class BoundedCache(dict[K, V]):
    """A dict of at most `capacity` entries; a new key past it drops the oldest inserted one.

    First in, first out: a hit costs a plain dict lookup (no LRU upkeep), and the caches here
    hold what writes refresh anyway (rendered views, recent ledger movements, amounts)."""

    __slots__ = ("capacity",)

    def __init__(self, capacity: int) -> None:
        super().__init__()
        self.capacity = capacity

    def __setitem__(self, key: K, value: V) -> None:
        if len(self) >= self.capacity and key not in self:
            del self[next(iter(self))]
        super().__setitem__(key, value)


@contextmanager
def no_gc() -> Iterator[None]:
    """Pause the cyclic GC while building many objects that all stay alive.

    Decoding tens of thousands of documents, or indexing them, allocates millions of container
    objects; with the collector running, each of its passes re-walks everything allocated so far,
    which doubles the cost of a bulk build. JSON values and index entries cannot form cycles, so
    nothing is lost by waiting.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
