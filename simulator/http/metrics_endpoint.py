"""`GET /metrics` (team mode only, admin only): the figures of simulator/http/metrics.py.

Apart from them so that the URL table imports no prometheus_client outside team mode."""

from __future__ import annotations

from aiohttp import hdrs, web

from simulator.http.keys import METRICS, SETTINGS
from simulator.http.peers import PEER_HEADER


async def metrics_endpoint(request: web.Request) -> web.Response:
    from simulator.http.metrics import INSTANCE_HEADER

    metrics = request.app[METRICS]
    assert metrics is not None, "the route is served in team mode only"
    metrics.check_admin(request.headers.get(hdrs.AUTHORIZATION))
    # One worker of several: its siblings' figures too, unless a sibling is asking.
    peers = () if PEER_HEADER in request.headers else request.app[SETTINGS].peers
    body, content_type = await metrics.exposition(request.headers.get(hdrs.ACCEPT, ""), peers)
    headers = {hdrs.CONTENT_TYPE: content_type, INSTANCE_HEADER: metrics.instance}
    return web.Response(body=body, headers=headers)
