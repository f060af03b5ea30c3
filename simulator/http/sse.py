"""One server-sent-event answer, shared by the live streams (`GET /_sim/events`, `GET
/_sim/requests/stream`): the headers, the `retry`/`connected` preamble, keep-alives while quiet,
and the bounds that keep a stalled reader from holding the server's buffers."""

from __future__ import annotations

import asyncio

from aiohttp import web

from simulator.events.stream import Frame
from simulator.http.keys import REQUEST_ID
from simulator.http.responses import REQUEST_ID_HEADER


def sse_response(request: web.Request) -> web.StreamResponse:
    return web.StreamResponse(
        headers={
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",
            REQUEST_ID_HEADER: request[REQUEST_ID],
        }
    )


async def write_frames(
    request: web.Request,
    response: web.StreamResponse,
    queue: asyncio.Queue[Frame],
    *,
    keepalive_seconds: float,
    write_timeout_seconds: float,
) -> None:
    """Write the queue's frames until it yields None (the server is stopping, or the reader
    fell too far behind) or the reader goes away."""
    try:
        frame: Frame = b"retry: 3000\n: connected\n\n"
        while frame is not None:
            # A reader that stops reading leaves the write waiting for room for good: one that
            # takes nothing for the write timeout is cut off, its buffers dropped.
            await asyncio.wait_for(response.write(frame), write_timeout_seconds)
            try:
                frame = await asyncio.wait_for(queue.get(), keepalive_seconds)
            except TimeoutError:
                frame = b": keep-alive\n\n"  # also how a vanished reader is noticed
    except TimeoutError:
        if request.transport is not None:
            request.transport.abort()  # close() would wait to flush to a reader who won't read
    except ConnectionResetError:
        pass  # the reader went away
