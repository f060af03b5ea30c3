"""The request log (design.md 1.5): GET /_sim/requests, /_sim/requests/{requestId} and the live
tail /_sim/requests/stream. The caller sees its merchant's requests (simulator/domain/requestlog.py
says which and how bodies are masked); these reads are never logged themselves."""

from __future__ import annotations

import asyncio

from aiohttp import web

from simulator.domain.requestlog import parse_filters
from simulator.http.keys import REQUEST_ID, REQUEST_LOG, REQUEST_TAIL
from simulator.http.middlewares import auth, principal_of
from simulator.http.requests import page_params
from simulator.http.reset import streaming
from simulator.http.responses import REQUEST_ID_HEADER, json_response, offset_page


@auth("sandbox")
async def list_requests(request: web.Request) -> web.Response:
    limit, offset = page_params(request)
    filters = parse_filters(request.query)
    merchant_id = principal_of(request).merchant.id
    rows, total = request.app[REQUEST_LOG].page(merchant_id, filters, limit, offset)
    return json_response(offset_page([entry.summary() for entry in rows], total, limit, offset))


@auth("sandbox")
async def get_request(request: web.Request) -> web.Response:
    entry = request.app[REQUEST_LOG].find(
        principal_of(request).merchant.id, request.match_info["requestId"]
    )
    return json_response(entry.detail())


@streaming
@auth("sandbox")
async def request_stream(request: web.Request) -> web.StreamResponse:
    filters = parse_filters(request.query)  # a bad filter is a 400 before the stream opens
    tail = request.app[REQUEST_TAIL]
    response = web.StreamResponse(
        headers={
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",
            REQUEST_ID_HEADER: request[REQUEST_ID],
        }
    )
    await response.prepare(request)
    with tail.subscribe(principal_of(request).merchant.id, filters) as queue:
        try:
            await response.write(b"retry: 3000\n: connected\n\n")
            while True:
                try:
                    frame = await asyncio.wait_for(queue.get(), tail.keepalive_seconds)
                except TimeoutError:
                    frame = b": keep-alive\n\n"  # also how a vanished reader is noticed
                if frame is None:  # server shutting down, or this reader fell too far behind
                    break
                await response.write(frame)
        except ConnectionResetError:
            pass  # the reader went away
    return response
