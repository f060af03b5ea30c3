"""The simulator control plane (design.md 1.3, 1.5): the clock, the reset, coverage, and what
each payment method needs."""

from __future__ import annotations

from aiohttp import web

from simulator.clock import isoformat
from simulator.domain.auth import resolve_shop
from simulator.domain.methods import method_requirements
from simulator.domain.money import parse_amount
from simulator.domain.requestlog import include_tools
from simulator.http.keys import CATALOG, CLOCK, CONTEXT, ENGINE, RESET, SCHEDULER, STORE
from simulator.http.middlewares import auth, principal_of
from simulator.http.requests import read_json
from simulator.http.responses import json_response


def clock_state(request: web.Request) -> dict[str, object]:
    clock = request.app[CLOCK]
    return {"now": isoformat(clock.timestamp()), "offsetSeconds": round(clock.offset_seconds, 3)}


@auth("sandbox")
async def get_clock(request: web.Request) -> web.Response:
    return json_response(clock_state(request))


@auth("sandbox")
async def advance_clock(request: web.Request) -> web.Response:
    # The body's shape and bounds (a number in (0, ten years], no other field) are checked
    # against the OpenAPI schema before this runs.
    body = await read_json(request)
    seconds = parse_amount(body["seconds"], param="seconds", code="invalid_request")
    # Due webhook retries go out as the clock passes them; only local receivers are waited
    # for, and only for a bounded time (simulator/events/engine.py).
    with request.app[ENGINE].walking_the_clock():
        await request.app[SCHEDULER].advance(float(seconds))
    request.app[STORE].table("meta").put(
        "clock", {"id": "clock", "offsetSeconds": request.app[CLOCK].offset_seconds}
    )
    return json_response(clock_state(request))


@auth("sandbox")
async def reset_server(request: web.Request) -> web.Response:
    # Waits for the requests already running, holds new ones, then swaps the world
    # (simulator/http/reset.py); 409 requests_in_flight if they do not finish in time.
    await request.app[RESET].run()
    return json_response({"reset": True, "clock": clock_state(request)})


@auth("sandbox")
async def get_coverage(request: web.Request) -> web.Response:
    # The caller's merchant's counts only (simulator/domain/coverage.py).
    coverage = request.app[CONTEXT].coverage
    merchant_id = principal_of(request).merchant.id
    report = coverage.report(
        isoformat(coverage.since), merchant_id, include_tools=include_tools(request.query)
    )
    return json_response(report)


@auth("sandbox")
async def payment_method_requirements(request: web.Request) -> web.Response:
    principal = principal_of(request)
    catalog = request.app[CATALOG]
    shop = resolve_shop(principal, catalog, request.query.get("shopId"))
    return json_response(method_requirements(catalog, shop, principal.environment))
