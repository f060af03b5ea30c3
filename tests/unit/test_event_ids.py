"""Event ids: `evt_` and 24 random hex digits, reproducible under a seed."""

from __future__ import annotations

import random
import re

from simulator.events.bus import EventBus
from simulator.store import Store

EVENT_ID = re.compile(r"evt_[0-9a-f]{24}")


def ids(rng: random.Random, count: int = 50) -> list[str]:
    bus = EventBus(Store.memory().table("events"), lambda: 0.0, rng)
    return [
        bus.emit("mer_x", "sandbox", "claim.opened", {"id": str(n)})["id"] for n in range(count)
    ]


def test_a_seeded_bus_draws_its_ids_from_the_rng_digit_by_digit() -> None:
    expected = random.Random(7)
    assert ids(random.Random(7), 3) == [
        "evt_" + "".join(expected.choices("0123456789abcdef", k=24)) for _ in range(3)
    ]


def test_unseeded_buses_make_distinct_well_formed_ids() -> None:
    class Buffered(random.Random):  # an rng with its own token_hex, as a buffered CSPRNG has
        def token_hex(self, nbytes: int) -> str:
            return random.randbytes(nbytes).hex()

    for rng in (random.SystemRandom(), Buffered()):
        made = ids(rng)
        assert all(EVENT_ID.fullmatch(event_id) for event_id in made)
        assert len(set(made)) == len(made)
