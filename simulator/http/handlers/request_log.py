"""The request log (design.md 1.5): GET /_sim/requests, /_sim/requests/{requestId} and the live
tail /_sim/requests/stream. The caller sees the requests its merchant owns (simulator/domain/
requestlog.py says which and how bodies are masked), without those of payorch's own tools unless
`includeTools=true`; these reads are never logged themselves."""

from __future__ import annotations

from aiohttp import web

from simulator.domain.requestlog import parse_filters
from simulator.http.keys import REQUEST_LOG, REQUEST_TAIL
from simulator.http.middlewares import auth, principal_of
from simulator.http.requests import page_params
from simulator.http.reset import streaming
from simulator.http.responses import json_response, offset_page
from simulator.http.sse import sse_response, write_frames


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
    response = sse_response(request)
    await response.prepare(request)
    with tail.subscribe(principal_of(request).merchant.id, filters) as queue:
        await write_frames(
            request,
            response,
            queue,
            keepalive_seconds=tail.keepalive_seconds,
            write_timeout_seconds=tail.write_timeout_seconds,
        )
    return response
