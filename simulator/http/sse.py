"""One server-sent-event answer, shared by the live streams (`GET /_sim/events`, `GET
/_sim/requests/stream`): the headers, the `retry`/`connected` preamble, keep-alives while quiet,
and the bounds that keep a stalled reader from holding the server's buffers.

A reader that stops reading is noticed by what it takes, not by whether a write blocks: the
kernel takes a few megabytes for a socket before a write would block (its send buffer grows
by itself), and at a few events a second that is minutes of events. So each stream's socket gets
a fixed, small send buffer, and `StallWatch` looks at what the reader has taken (the bytes
written less those the event loop and the kernel still hold for it) a few times per stall
period: when bytes wait and none has been taken for the stall period, the connection is
aborted and its queue dropped. An idle stream (nothing waiting) is never a stalled one.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from collections.abc import Callable

from aiohttp import web

from simulator.events.stream import Frame
from simulator.http.keys import REQUEST_ID
from simulator.http.responses import REQUEST_ID_HEADER

try:  # Unix: the bytes a socket's kernel buffer still holds (unsent, or sent and unacknowledged)
    import fcntl
    import termios

    _OUTQ: int | None = termios.TIOCOUTQ
except (ImportError, AttributeError):  # elsewhere only the event loop's own buffer is seen
    _OUTQ = None

# The kernel's send buffer of a stream's socket (Linux doubles it for its bookkeeping): enough
# for a reader that keeps up; what a stalled one can hold beyond its queue's bound.
SEND_BUFFER_BYTES = 64 * 1024
CHECKS_PER_PERIOD = 5


def sse_response(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(
        headers={
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",
            REQUEST_ID_HEADER: request[REQUEST_ID],
        }
    )
    # The connection ends with the stream (a reader reconnects with a new request): a reader
    # dropped for falling behind is not left holding an idle connection.
    response.force_close()
    return response


async def write_frames(
    request: web.Request,
    response: web.StreamResponse,
    queue: asyncio.Queue[Frame],
    *,
    keepalive_seconds: float,
    write_timeout_seconds: float,
) -> None:
    """Write the queue's frames until it yields None (the server is stopping, or the reader
    fell too far behind) or the reader goes away, or takes nothing for `write_timeout_seconds`
    while frames wait for it (then its connection is aborted)."""
    watch = StallWatch(request, write_timeout_seconds, on_stall=lambda: _cut(request, queue))
    try:
        frame: Frame = b"retry: 3000\n: connected\n\n"
        while frame is not None:
            await response.write(frame)
            try:
                frame = await asyncio.wait_for(queue.get(), keepalive_seconds)
            except TimeoutError:
                frame = b": keep-alive\n\n"  # also how a vanished reader is noticed
        # Ended here and flushed, still watched: a stalled reader would otherwise keep its
        # connection, and what the server holds for it, once the handler has returned.
        await response.write_eof()
        await watch.flushed()
    except ConnectionError:
        pass  # the reader went away, or was cut off
    finally:
        watch.stop()


def _cut(request: web.Request, queue: asyncio.Queue[Frame]) -> None:
    """Reset the stalled reader's connection and wake its writer, which then finds it gone.

    Reset, not closed: a close waits to flush to a reader who won't read, and even the event
    loop's abort() only closes the socket, whose kernel keeps the unsent bytes and keeps
    offering them to the reader (for minutes: it never sees the end). A zero linger makes the
    close a reset, which drops them."""
    transport = request.transport
    if transport is not None:
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()
    while not queue.empty():
        queue.get_nowait()
    queue.put_nowait(None)


class StallWatch:
    """Calls `on_stall` once the reader of `request`'s connection has taken no byte for
    `seconds` while bytes wait for it; checked `CHECKS_PER_PERIOD` times per period (at most
    once a second), on the event loop's timer, so a writer blocked on a full buffer is
    watched too."""

    def __init__(
        self, request: web.Request, seconds: float, *, on_stall: Callable[[], None]
    ) -> None:
        self._writer = request.writer
        self._transport = request.transport
        self._seconds = seconds
        self._on_stall = on_stall
        self._loop = asyncio.get_running_loop()
        self._taken = 0
        self._progress_at = self._loop.time()
        self._timer: asyncio.TimerHandle | None = None
        sock = self._transport.get_extra_info("socket") if self._transport else None
        self._fileno = sock.fileno() if sock is not None else -1
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_BYTES)
        if seconds > 0 and self._transport is not None:
            self._interval = min(seconds / CHECKS_PER_PERIOD, 1.0)
            self._timer = self._loop.call_later(self._interval, self._check)

    async def flushed(self) -> None:
        """Return once the reader has taken every byte written to it, or has been cut off (at
        once when no stall period is set)."""
        while self._timer is not None and self._waiting() > 0:
            await asyncio.sleep(self._interval)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _check(self) -> None:
        self._timer = None
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        waiting = self._waiting()
        taken = self._writer.output_size - waiting
        now = self._loop.time()
        if waiting == 0 or taken > self._taken:
            self._taken, self._progress_at = taken, now
        elif now - self._progress_at >= self._seconds:
            self._on_stall()
            return
        self._timer = self._loop.call_later(self._interval, self._check)

    def _waiting(self) -> int:
        """Bytes written to the reader that it has not taken yet."""
        if self._transport is None:
            return 0
        return self._transport.get_write_buffer_size() + self._in_kernel()

    def _in_kernel(self) -> int:
        if _OUTQ is None or self._fileno < 0:
            return 0
        try:
            raw = fcntl.ioctl(self._fileno, _OUTQ, b"\0\0\0\0")
        except OSError:
            return 0
        held: int = struct.unpack("i", raw)[0]
        return held
