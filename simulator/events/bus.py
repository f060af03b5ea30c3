"""The one event bus: every state change becomes an event envelope, stored and fanned out.

Listeners (webhook delivery, the SSE stream) are called synchronously and must not block: they
queue work of their own.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from simulator.clock import isoformat
from simulator.domain.ids import token_hex
from simulator.domain.ports import Table
from simulator.jsonio import plain

if TYPE_CHECKING:
    from simulator.domain.records import EventEnvelope, EventRecord

API_VERSION = "2026-05-01"
log = logging.getLogger(__name__)

EventListener = Callable[["EventRecord"], None]

# The ids of the events emitted while one request is answered, when the request log keeps it: the
# log says which events each request caused (`eventIds`), which `payorch record` needs to put
# each event after its request; timestamps to the millisecond cannot tell two close requests apart.
# Each as (event id, merchant id): a clock advance runs every merchant's jobs, and a log entry
# names only its own merchant's events.
EVENTS_OF_REQUEST: ContextVar[list[tuple[str, str]] | None] = ContextVar(
    "events_of_request", default=None
)
HEX = "0123456789abcdef"


def hex_source(rng: random.Random) -> Callable[[], str]:
    """24 random hex digits per call, from `rng`.

    A seeded rng draws them one by one (`choices`), so seeded runs keep their ids. An unseeded
    one has no sequence to keep: the same uniform digits come from 12 random bytes at once,
    through the rng's own `token_hex` when it has one (a buffered CSPRNG) or the OS's; drawing
    24 floats for them was half the cost of emitting an event.
    """
    own = getattr(rng, "token_hex", None)
    if callable(own):
        return lambda: own(12)
    if isinstance(rng, random.SystemRandom):
        return lambda: token_hex(12)
    return lambda: "".join(rng.choices(HEX, k=24))


class EventBus:
    def __init__(
        self, table: Table[EventRecord], now: Callable[[], float], rng: random.Random
    ) -> None:
        self._table = table
        self._now = now
        self._hex = hex_source(rng)
        self._listeners: list[EventListener] = []

    def subscribe(self, listener: EventListener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def emit(
        self,
        merchant_id: str,
        environment: str,
        event_type: str,
        data: dict[str, Any],
        *,
        at: float | None = None,
    ) -> EventEnvelope:
        """`at`: the instant the event happened, when its emitter knows it (the events of one
        transition share one); the clock's now otherwise."""
        event_id = "evt_" + self._hex()
        envelope: EventEnvelope = {
            "id": event_id,
            "type": event_type,
            "apiVersion": API_VERSION,
            "environment": environment,
            "createdAt": isoformat(self._now() if at is None else at),
            "data": plain(data),
        }
        self._table.put(event_id, {**envelope, "merchantId": merchant_id})
        of_request = EVENTS_OF_REQUEST.get()
        if of_request is not None:
            of_request.append((event_id, merchant_id))
        for listener in list(self._listeners):
            try:
                listener({**envelope, "merchantId": merchant_id})
            except Exception:  # one broken listener must not undo the state change
                log.exception("event listener failed for %s", event_type)
        return envelope
