"""Building responses: JSON bodies through the one serialiser, errors through the one envelope."""

from __future__ import annotations

import math
from http import HTTPStatus
from typing import Any

from aiohttp import web

from simulator.domain.errors import ApiError
from simulator.domain.ids import token_hex
from simulator.http.aiohttp_private import Answer as Answer  # its home is the fence
from simulator.jsonio import dumps

REQUEST_ID_HEADER = "X-Request-Id"


def json_response(
    data: Any, *, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    return Answer(body=dumps(data), status=status, content_type="application/json", headers=headers)


def error_response(error: ApiError, request_id: str) -> web.Response:
    headers = {REQUEST_ID_HEADER: request_id, **error.headers}
    close = headers.pop("Connection", "").lower() == "close"
    response = json_response(error.body(request_id), status=error.status, headers=headers)
    if close:
        response.force_close()  # the request's body is not worth reading any further
    return response


def new_request_id() -> str:
    """The id of a request answered outside the request middleware, which mints (and may seed)
    the others'."""
    return "req_" + token_hex(12)


def refusal_response(error: ApiError, request_id: str | None = None) -> web.Response:
    """The one helper for an error answered outside the request middleware (a body that could
    not be had, an unknown namespace, a sibling worker's namespace, a connection aiohttp could
    not parse): the catalogue's envelope, with a request id of its own unless given one."""
    return error_response(error, request_id or new_request_id())


def refusal_bytes(error: ApiError, request_id: str) -> bytes:
    """`refusal_response` as the bytes of a whole HTTP/1.1 answer that closes its connection, for a
    connection refused before aiohttp made a request of it."""
    body = dumps(error.body(request_id))
    extra = "".join(f"{name}: {value}\r\n" for name, value in error.headers.items())
    head = (
        f"HTTP/1.1 {error.status} {HTTPStatus(error.status).phrase}\r\n"
        f"Content-Type: application/json\r\n{extra}{REQUEST_ID_HEADER}: {request_id}\r\n"
        f"Connection: close\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def offset_page(rows: list[Any], total: int, limit: int, offset: int) -> dict[str, Any]:
    """The spec's list envelope: `{data, pagination: {total, limit, offset, pages}}`."""
    return {"data": rows, "pagination": _pagination(total, limit, offset)}


def offset_page_bytes(rows: list[bytes], total: int, limit: int, offset: int) -> bytes:
    """`offset_page` with rows already encoded: the same bytes `dumps(offset_page(...))` gives."""
    pagination = dumps(_pagination(total, limit, offset))
    return b'{"data":[' + b",".join(rows) + b'],"pagination":' + pagination + b"}"


def _pagination(total: int, limit: int, offset: int) -> dict[str, int]:
    return {"total": total, "limit": limit, "offset": offset, "pages": math.ceil(total / limit)}
