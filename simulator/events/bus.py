"""The one event bus: every state change becomes an event envelope, stored and fanned out.

Listeners (webhook delivery, the SSE stream) are called synchronously and must not block: they
queue work of their own.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from typing import Any

from simulator.clock import isoformat
from simulator.domain.ports import Table
from simulator.jsonio import plain

API_VERSION = "2026-05-01"
log = logging.getLogger(__name__)

Listener = Callable[[dict[str, Any]], None]


class EventBus:
    def __init__(self, table: Table, now: Callable[[], float], rng: random.Random) -> None:
        self._table = table
        self._now = now
        self._rng = rng
        self._listeners: list[Listener] = []

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def emit(
        self, merchant_id: str, environment: str, event_type: str, data: dict[str, Any]
    ) -> dict[str, Any]:
        event_id = "evt_" + "".join(self._rng.choices("0123456789abcdef", k=24))
        envelope = {
            "id": event_id,
            "type": event_type,
            "apiVersion": API_VERSION,
            "environment": environment,
            "createdAt": isoformat(self._now()),
            "data": plain(data),
        }
        self._table.put(event_id, {**envelope, "merchantId": merchant_id})
        for listener in list(self._listeners):
            try:
                listener({**envelope, "merchantId": merchant_id})
            except Exception:  # one broken listener must not undo the state change
                log.exception("event listener failed for %s", event_type)
        return envelope
