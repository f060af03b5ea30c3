"""Reading requests: the JSON body rules (415, 400, 413) and query parameters, in one place."""

from __future__ import annotations

import re
from typing import Any

from aiohttp import web

from simulator.domain.errors import ApiError
from simulator.http.keys import SETTINGS
from simulator.jsonio import JSONDecodeError, loads

JSON_TYPES = ("application/json",)
_INTEGER = re.compile(r"-?[0-9]{1,12}")


async def read_json(request: web.Request, *, optional: bool = False) -> dict[str, Any]:
    """The body as a JSON object. An absent body is `{}` when every field is optional."""
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise ApiError(
            "payload_too_large",
            f"The body exceeds {request.app[SETTINGS].body_limit} bytes.",
            details={"limitBytes": request.app[SETTINGS].body_limit},
        ) from None
    if not raw.strip():
        if optional:
            return {}
        raise ApiError(
            "invalid_request",
            "A JSON object body is required.",
            details={"issues": [{"path": "", "message": "empty body"}]},
        )
    if request.content_type not in JSON_TYPES:
        raise ApiError(
            "content_type_required",
            f"Send the body with Content-Type: application/json (got "
            f"{request.headers.get('Content-Type') or 'none'}).",
        )
    try:
        body = loads(raw)
    except JSONDecodeError as exc:
        raise ApiError("invalid_json", f"The body is not valid JSON: {exc}.") from None
    if not isinstance(body, dict):
        raise ApiError(
            "invalid_request",
            "The body must be a JSON object.",
            details={"issues": [{"path": "", "message": "expected an object"}]},
        )
    return body


def query_int(
    request: web.Request, name: str, default: int, lo: int, hi: int, *, clamp: bool = True
) -> int:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return default
    # Plain decimal digits only: int() would also take "1_0", "+5" and surrounding spaces.
    if not _INTEGER.fullmatch(raw):
        raise ApiError(
            "invalid_request",
            f"`{name}` must be an integer.",
            param=name,
            details={"issues": [{"path": name, "message": "not an integer"}]},
        )
    value = int(raw)
    if clamp:
        return max(lo, min(hi, value))
    if not lo <= value <= hi:
        raise ApiError("invalid_request", f"`{name}` must be between {lo} and {hi}.", param=name)
    return value


def query_choice(request: web.Request, name: str, choices: tuple[str, ...]) -> str | None:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return None
    if raw not in choices:
        raise ApiError(
            "invalid_request",
            f"`{name}` must be one of {', '.join(choices)}.",
            param=name,
            details={"issues": [{"path": name, "message": f"one of {', '.join(choices)}"}]},
        )
    return raw


def base_url(request: web.Request) -> str:
    return f"{request.scheme}://{request.host}"


def page_params(request: web.Request, *, max_limit: int = 100) -> tuple[int, int]:
    """(limit, offset) of an offset-paginated list; `limit` is clamped silently (spec Limits)."""
    return (
        query_int(request, "limit", 50, 1, max_limit),
        query_int(request, "offset", 0, 0, 2**31),
    )
