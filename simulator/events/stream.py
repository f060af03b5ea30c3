"""Fan-out of emitted events to live `GET /_sim/events` streams, per (merchant, environment).

The bus calls `on_event` inside the emitter's batch, before the state change is durable. So the
event is published one loop iteration later, and only if it is still stored: an event whose
batch rolled back never reaches a stream (the store forbids awaiting inside a batch, so by then
the batch has ended one way or the other).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from simulator.domain.auth import Scope
from simulator.domain.ports import Table
from simulator.jsonio import dumps

if TYPE_CHECKING:
    from simulator.domain.records import EventRecord

MAX_BACKLOG = 1_000  # events queued for one slow reader before its stream is closed
MAX_BACKLOG_BYTES = 1024 * 1024  # and the bytes they may take, whatever their size
KEEPALIVE_SECONDS = 15.0
# A reader that takes nothing for this many seconds while bytes wait for it is cut off (a reader
# that stopped reading would otherwise hold its connection and buffers for good): the stall
# watch of simulator/http/sse.py; `Settings.stream_stall_timeout` sets it per server.
WRITE_TIMEOUT_SECONDS = 10.0

# bytes: one SSE frame to write; None: end the stream (shutdown or a reader too far behind).
Frame = bytes | None


class FrameQueue(asyncio.Queue[Frame]):
    """One reader's frames waiting to be written, and how many bytes they take."""

    nbytes: int

    def _init(self, maxsize: int) -> None:
        super()._init(maxsize)
        self.nbytes = 0

    def _put(self, item: Frame) -> None:
        super()._put(item)
        self.nbytes += len(item) if item else 0

    def _get(self) -> Frame:
        item = super()._get()
        self.nbytes -= len(item) if item else 0
        return item

    @property
    def backlogged(self) -> bool:
        """Too far behind to catch up: the stream is closed rather than let it grow."""
        return self.qsize() >= MAX_BACKLOG or self.nbytes >= MAX_BACKLOG_BYTES


def sse_frame(event: EventRecord) -> bytes:
    """One server-sent event: the envelope as a single `data:` line (JSON has no newlines)."""
    public = {k: v for k, v in event.items() if k != "merchantId"}
    return b"id: " + event["id"].encode() + b"\ndata: " + dumps(public) + b"\n\n"


class EventStream:
    def __init__(
        self,
        events: Table[EventRecord],
        keepalive_seconds: float = KEEPALIVE_SECONDS,
        write_timeout_seconds: float = WRITE_TIMEOUT_SECONDS,
    ) -> None:
        self._events = events
        self._readers: dict[Scope, set[FrameQueue]] = defaultdict(set)
        self.keepalive_seconds = keepalive_seconds
        self.write_timeout_seconds = write_timeout_seconds

    def on_event(self, event: EventRecord) -> None:
        if not self._readers.get((event["merchantId"], event["environment"])):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._publish(event)
            return
        loop.call_soon(self._publish, event)

    def _publish(self, event: EventRecord) -> None:
        readers = self._readers.get((event["merchantId"], event["environment"]))
        if not readers or self._events.get(event["id"]) is None:
            return
        frame = sse_frame(event)
        for queue in list(readers):
            if queue.backlogged:
                self._close(queue)
                readers.discard(queue)  # nothing more for it: its writer ends at the None
            else:
                queue.put_nowait(frame)

    @contextmanager
    def subscribe(self, scope: Scope) -> Iterator[FrameQueue]:
        queue = FrameQueue()
        self._readers[scope].add(queue)
        try:
            yield queue
        finally:
            self._readers[scope].discard(queue)

    def close_all(self) -> None:
        """End every stream (server shutdown), so no open stream holds the exit back."""
        for readers in self._readers.values():
            for queue in list(readers):
                self._close(queue)

    def readers(self, scope: Scope) -> int:
        return len(self._readers.get(scope, ()))

    @staticmethod
    def _close(queue: asyncio.Queue[Frame]) -> None:
        while not queue.empty():
            queue.get_nowait()
        queue.put_nowait(None)
