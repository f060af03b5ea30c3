"""Fan-out of the request log to live `GET /_sim/requests/stream` readers (`payorch logs tail`).

Each reader has its merchant and its filters; a request it may see and its filters match is put
on its queue as one server-sent event (the summary, encoded once per request however many
readers take it). While nobody tails, it is not among the log's listeners: recording a request
costs nothing here.
Like the event stream (`simulator/events/stream.py`), a reader more than MAX_BACKLOG frames (or
MAX_BACKLOG_BYTES) behind is closed rather than let its queue grow without bound.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from simulator.domain.requestlog import Entry, LogRow, RequestFilters, RequestLog, visible_to
from simulator.events.stream import KEEPALIVE_SECONDS, WRITE_TIMEOUT_SECONDS, FrameQueue
from simulator.jsonio import dumps


def sse_frame(row: LogRow) -> bytes:
    return b"id: " + row[0].encode() + b"\ndata: " + dumps(Entry(row).summary()) + b"\n\n"


@dataclass(slots=True)
class _Reader:
    merchant_id: str
    filters: RequestFilters
    queue: FrameQueue
    closed: bool = False


class RequestTail:
    def __init__(
        self,
        log: RequestLog,
        keepalive_seconds: float = KEEPALIVE_SECONDS,
        write_timeout_seconds: float = WRITE_TIMEOUT_SECONDS,
    ) -> None:
        self._readers: list[_Reader] = []
        self.keepalive_seconds = keepalive_seconds
        self.write_timeout_seconds = write_timeout_seconds
        self._log = log
        self._unsubscribe: Callable[[], None] | None = None  # listening while anyone tails

    def _on_row(self, row: LogRow) -> None:
        if not self._readers:
            return
        frame: bytes | None = None
        for reader in self._readers:
            if reader.closed or not (
                visible_to(row, reader.merchant_id) and reader.filters.matches(row)
            ):
                continue
            if reader.queue.backlogged:
                self._close(reader)
                continue
            frame = frame or sse_frame(row)
            reader.queue.put_nowait(frame)

    @contextmanager
    def subscribe(self, merchant_id: str, filters: RequestFilters) -> Iterator[FrameQueue]:
        reader = _Reader(merchant_id, filters, FrameQueue())
        self._readers.append(reader)
        if self._unsubscribe is None:
            self._unsubscribe = self._log.subscribe(self._on_row)
        try:
            yield reader.queue
        finally:
            self._readers.remove(reader)
            if not self._readers and self._unsubscribe is not None:
                self._unsubscribe()
                self._unsubscribe = None

    def readers(self) -> int:
        return len(self._readers)

    def close_all(self) -> None:
        """End every tail (server shutdown), so no open stream holds the exit back."""
        for reader in self._readers:
            self._close(reader)

    @staticmethod
    def _close(reader: _Reader) -> None:
        """Drop what it has not read and end it (its handler then leaves the loop)."""
        if reader.closed:
            return
        reader.closed = True
        while not reader.queue.empty():
            reader.queue.get_nowait()
        reader.queue.put_nowait(None)
