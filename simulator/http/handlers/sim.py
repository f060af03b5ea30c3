"""The simulator control plane (design.md 1.3): the clock."""

from __future__ import annotations

from decimal import Decimal

from aiohttp import web

from simulator.clock import isoformat
from simulator.domain.errors import ApiError
from simulator.domain.money import parse_amount
from simulator.http.keys import CLOCK, SCHEDULER, STORE
from simulator.http.middlewares import auth
from simulator.http.requests import read_json
from simulator.http.responses import json_response

MAX_ADVANCE_SECONDS = Decimal(10 * 365 * 86_400)


def clock_state(request: web.Request) -> dict[str, object]:
    clock = request.app[CLOCK]
    return {"now": isoformat(clock.timestamp()), "offsetSeconds": round(clock.offset_seconds, 3)}


@auth("sandbox")
async def get_clock(request: web.Request) -> web.Response:
    return json_response(clock_state(request))


@auth("sandbox")
async def advance_clock(request: web.Request) -> web.Response:
    body = await read_json(request)
    unknown = sorted(set(body) - {"seconds"})
    if unknown:
        raise ApiError(
            "invalid_request",
            f"Unknown field(s): {', '.join(unknown)}.",
            param=unknown[0],
            details={"issues": [{"path": k, "message": "unknown field"} for k in unknown]},
        )
    if "seconds" not in body:
        raise ApiError("missing_field", "`seconds` is required.", param="seconds")
    seconds = parse_amount(body["seconds"], param="seconds", code="invalid_request")
    if seconds > MAX_ADVANCE_SECONDS:
        raise ApiError("invalid_request", "`seconds` may be at most ten years.", param="seconds")
    await request.app[SCHEDULER].advance(float(seconds))
    request.app[STORE].table("meta").put(
        "clock", {"id": "clock", "offsetSeconds": request.app[CLOCK].offset_seconds}
    )
    return json_response(clock_state(request))
