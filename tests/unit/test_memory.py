"""The one bounded cache (first in, first out) and the one GC pause."""

from __future__ import annotations

import gc

from simulator.memory import BoundedCache, no_gc


def test_a_new_key_past_capacity_drops_the_oldest_inserted() -> None:
    cache: BoundedCache[str, int] = BoundedCache(2)
    cache["a"], cache["b"] = 1, 2
    cache["a"] = 10  # replacing never evicts, and keeps the key's place
    assert list(cache.items()) == [("a", 10), ("b", 2)]
    cache["c"] = 3
    assert list(cache.items()) == [("b", 2), ("c", 3)]


def test_the_gc_pause_restores_what_it_found() -> None:
    assert gc.isenabled()
    with no_gc():
        assert not gc.isenabled()
        with no_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()  # an inner pause never re-enables early
    assert gc.isenabled()
