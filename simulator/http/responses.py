"""Building responses: JSON bodies through the one serialiser, errors through the one envelope."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from aiohttp import hdrs, web
from aiohttp.abc import AbstractStreamWriter
from aiohttp.compression_utils import MAX_SYNC_CHUNK_SIZE
from aiohttp.helpers import rfc822_formatted_time
from aiohttp.http import SERVER_SOFTWARE, HttpVersion11
from aiohttp.http_writer import _serialize_headers as serialize_head
from aiohttp.web_request import BaseRequest

from simulator.domain.errors import ApiError
from simulator.jsonio import dumps

REQUEST_ID_HEADER = "X-Request-Id"
# Answers aiohttp sends without a body (RFC 9110): `Answer` leaves them to aiohttp.
_BODILESS_METHODS = (hdrs.METH_HEAD, hdrs.METH_CONNECT)
_BODY_STATUSES = frozenset(range(200, 600)) - {204, 304}


class Answer(web.Response):
    """`web.Response` for the API's answers, whose usual case is sent in one step.

    aiohttp prepares a response in half a dozen coroutine and property calls (its headers, the
    request's keep-alive, the status line, then the body in a call of its own), an eighth of
    the HTTP layer's work on a payment's creation. A bytes body over HTTP/1.1 with no cookie, no
    compression, no chunking and a status and method that allow a body is sent here the same
    way, with the same headers in the same order (Content-Length, Date, Server, Connection:
    close when the connection is not kept), through the connection's own writer; anything
    else is aiohttp's own `prepare`. The head is serialised by aiohttp's own function for it, the
    one its writer uses."""

    def __init__(
        self,
        *,
        body: bytes,
        status: int = 200,
        content_type: str = "application/json",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """`web.Response(body=..., status=..., content_type=..., headers=...)`, less what a
        bytes body never needs (text, charset, a payload's own headers)."""
        super(web.Response, self).__init__(status=status, headers=headers)
        if hdrs.CONTENT_TYPE in self._headers:
            raise ValueError("a Content-Type header and content_type are not allowed together")
        self._headers[hdrs.CONTENT_TYPE] = content_type
        self._body = body
        self._zlib_executor_size = MAX_SYNC_CHUNK_SIZE
        self._zlib_executor = None

    async def prepare(self, request: BaseRequest) -> AbstractStreamWriter | None:
        body = self._body
        if (
            type(body) is not bytes
            or not body
            or self._payload_writer is not None
            or self._eof_sent
            or self._chunked
            or self._compression
            or self._cookies
            or self._status not in _BODY_STATUSES
            or request.method in _BODILESS_METHODS
            or request.version != HttpVersion11
        ):
            return await super().prepare(request)
        headers = self._headers
        if hdrs.CONTENT_LENGTH in headers:
            return await super().prepare(request)
        keep_alive = self._keep_alive
        if keep_alive is None:
            keep_alive = self._keep_alive = request.keep_alive
        length = len(body)
        headers[hdrs.CONTENT_LENGTH] = str(length)
        headers.setdefault(hdrs.CONTENT_TYPE, "application/octet-stream")
        if hdrs.DATE not in headers:
            headers[hdrs.DATE] = rfc822_formatted_time()
        headers.setdefault(hdrs.SERVER, SERVER_SOFTWARE)
        if not keep_alive and hdrs.CONNECTION not in headers:
            headers[hdrs.CONNECTION] = "close"
        writer = request.writer
        self._req = request
        self._payload_writer = writer
        self._must_be_empty_body = False
        writer.length = length
        # The apps' `on_response_prepare` signals, when one has any (the API's have none).
        match_info = request._match_info if isinstance(request, web.Request) else None
        for app in match_info.apps if match_info is not None else ():
            if app.on_response_prepare:
                await request._prepare_hook(self)
                break
        # The head as the writer's `write_headers` serialises it, sent with the body in one
        # write (what it does with a buffered head), without the coroutine and the join.
        head = serialize_head(f"HTTP/1.1 {self._status} {self._reason}", headers)
        await writer.write_eof(head + body)
        self._eof_sent = True
        self._req = None
        self._body_length = writer.output_size
        self._payload_writer = None
        return writer


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


def offset_page(rows: list[Any], total: int, limit: int, offset: int) -> dict[str, Any]:
    """The spec's list envelope: `{data, pagination: {total, limit, offset, pages}}`."""
    return {"data": rows, "pagination": _pagination(total, limit, offset)}


def offset_page_bytes(rows: list[bytes], total: int, limit: int, offset: int) -> bytes:
    """`offset_page` with rows already encoded: the same bytes `dumps(offset_page(...))` gives."""
    pagination = dumps(_pagination(total, limit, offset))
    return b'{"data":[' + b",".join(rows) + b'],"pagination":' + pagination + b"}"


def _pagination(total: int, limit: int, offset: int) -> dict[str, int]:
    return {"total": total, "limit": limit, "offset": offset, "pages": math.ceil(total / limit)}
