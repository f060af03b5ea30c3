"""The request log: the last API requests the server answered, for debugging an integration.

A debugging aid, not state: kept in memory only, never in the store, so it is lost on a restart
and emptied by a reset (`POST /_sim/reset`). Bounded: the last `capacity` requests (10,000 by
default, `payorch serve --request-log N`, 0 turns it off), fewer if their bodies pass
`BODY_BUDGET` bytes in all; each body is kept up to `MAX_BODY` bytes.

Cheap on the request path: the middleware makes a row (`make_row`'s) of what it already holds
(the body bytes that were read, the response's bytes, the principal's merchant) and `record`
puts that one tuple on a deque. Nothing is decoded, masked or encoded then: a summary is built
when a list, a detail or a live tail reads the row, and the bodies are decoded and masked only
when its detail is read.

What is never shown: the Authorization header is not kept at all (the only request headers kept
are `Idempotency-Key` and `Sandbox-Simulate`, which change what a request does); keys, tokens,
tokened links, card numbers and personal data are masked when a row is read
(`simulator/domain/masking.py` says which and how).

Who sees a row (`visible_to`): the merchant that owns it, in either environment. The middleware
records the owner when the request is answered: the credential's merchant, or for a request
without one, the merchant of the object it named (a checkout session's token, a provider page's
payment, the key of `POST /auth/token`, the refresh token of `POST /auth/refresh`). A request no
merchant owns (no credential, an unknown key, an unknown token) is shown to nobody.

Requests made by payorch's own tools carry `X-Payorch-Tool` (`TOOL_HEADER`); the row keeps the
tag and lists and live tails leave those rows out unless `includeTools=true`.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict

import orjson

from payorch.vocabulary import API_PREFIX
from simulator.clock import isoformat
from simulator.domain.errors import ApiError
from simulator.domain.masking import (
    TooDeep,
    mask,
    mask_path,
    mask_query,
    mask_text,
)

DEFAULT_CAPACITY = 10_000
MAX_BODY = 64 * 1024  # bytes of each body kept; the rest is cut (`truncated`)
BODY_BUDGET = 128 * 1024 * 1024  # bytes of bodies kept in all; past it the oldest entries go
KEPT_HEADERS = ("Idempotency-Key", "Sandbox-Simulate")
LOG_PATH = "/_sim/requests"  # reads of the log are never logged
TOOL_HEADER = "X-Payorch-Tool"  # set by payorch's CLI and TUI on their own requests
MAX_TOOL = 32  # characters of the tag kept


# -- entries ------------------------------------------------------------------------------------


class RequestSummary(TypedDict):
    """One request as lists and the live tail show it (no bodies)."""

    id: str  # the request id (X-Request-Id, and `requestId` in an error envelope)
    at: str  # real time the request arrived
    simulatedAt: str  # simulated time then
    method: str
    path: str
    query: str | None
    status: int
    errorCode: str | None  # the envelope's `code`, for an error
    merchantId: str | None  # the merchant that owns the request (the module doc)
    environment: str | None
    tool: str | None  # the payorch tool that made it (X-Payorch-Tool), None for others
    durationMs: float
    idempotentReplayed: bool  # answered from an Idempotency-Key's stored response
    eventIds: list[str]  # the events emitted while it was answered, in order


class BodyView(TypedDict):
    bytes: int  # the body's size as it crossed the wire
    truncated: bool  # cut at MAX_BODY: shown as `text`
    body: NotRequired[Any]  # the JSON value, masked
    text: NotRequired[str]  # a body that is not JSON (or was cut), masked


class RequestHalf(TypedDict):
    headers: dict[str, str]
    body: BodyView


class ResponseHalf(TypedDict):
    body: BodyView


class RequestDetail(RequestSummary):
    """One request with its bodies (GET /_sim/requests/{requestId})."""

    request: RequestHalf
    response: ResponseHalf


# One answered request as it is recorded: a plain tuple of strings, numbers and bytes, which the
# garbage collector stops walking after its first pass (an object per request would be walked by
# every full collection while it is kept). Read it through `Entry`.
LogRow = tuple[
    str,  # 0 request id
    float,  # 1 real time it arrived
    float,  # 2 simulated time then
    str,  # 3 method
    str,  # 4 path
    str,  # 5 query string
    int,  # 6 status
    str | None,  # 7 owning merchant id (None: nobody's)
    str | None,  # 8 its environment
    float,  # 9 duration, ms
    bool,  # 10 answered from an Idempotency-Key's stored response
    tuple[tuple[str, str], ...],  # 11 the kept request headers
    bytes | None,  # 12 request body (at most MAX_BODY bytes of it)
    bytes | None,  # 13 response body (idem)
    int,  # 14 request body size
    int,  # 15 response body size
    tuple[str, ...],  # 16 ids of the events emitted while it was answered
    str | None,  # 17 the payorch tool that made it (X-Payorch-Tool)
]


class Entry:
    """A read of one row: what lists, details and the live tail show of it."""

    __slots__ = ("row",)

    def __init__(self, row: LogRow) -> None:
        self.row = row

    @property
    def request_id(self) -> str:
        return self.row[0]

    @property
    def status(self) -> int:
        return self.row[6]

    @property
    def merchant_id(self) -> str | None:
        return self.row[7]

    @property
    def error_code(self) -> str | None:
        """The `code` of the error envelope the response carried, if it is one."""
        body = self.row[13]
        if self.row[6] < 400 or not body:
            return None
        try:
            error = orjson.loads(body).get("error")
        except (orjson.JSONDecodeError, AttributeError):
            return None
        code = error.get("code") if isinstance(error, dict) else None
        return code if isinstance(code, str) else None

    def summary(self) -> RequestSummary:
        row = self.row
        return {
            "id": row[0],
            "at": isoformat(row[1]),
            "simulatedAt": isoformat(row[2]),
            "method": row[3],
            "path": mask_path(row[4]),
            "query": mask_query(row[5]) or None,
            "status": row[6],
            "errorCode": self.error_code,
            "merchantId": row[7],
            "environment": row[8],
            "durationMs": round(row[9], 2),
            "idempotentReplayed": row[10],
            "eventIds": list(row[16]),
            "tool": row[17],
        }

    def detail(self) -> RequestDetail:
        """The summary with both bodies, decoded and masked now."""
        row = self.row
        return {
            **self.summary(),
            "request": {"headers": dict(row[11]), "body": body_view(row[12], row[14])},
            "response": {"body": body_view(row[13], row[15])},
        }


def make_row(
    request_id: str,
    at: float,
    sim_at: float,
    method: str,
    path: str,
    query: str,
    status: int,
    merchant_id: str | None,
    environment: str | None,
    duration_ms: float,
    replayed: bool,
    headers: tuple[tuple[str, str], ...],
    request_body: bytes | None,
    response_body: bytes | None,
    event_ids: tuple[str, ...] = (),
    tool: str | None = None,
) -> LogRow:
    """The row of one request; each body is copied, cut at MAX_BODY (`_cut`)."""
    request_size = len(request_body) if request_body else 0
    response_size = len(response_body) if response_body else 0
    return (
        request_id,
        at,
        sim_at,
        method,
        path,
        query,
        status,
        merchant_id,
        environment,
        duration_ms,
        replayed,
        headers,
        _cut(request_body),
        _cut(response_body),
        request_size,
        response_size,
        event_ids,
        tool,
    )


def _kept_bytes(row: LogRow) -> int:
    return min(row[14], MAX_BODY) + min(row[15], MAX_BODY)


def _cut(body: bytes | None) -> bytes | None:
    """What is kept of a body: an exact-size copy of its first MAX_BODY bytes. A copy even of a
    short one: orjson's results (most answers) sit in buffers several times their size, which a
    kept reference would hold on to (10,000 payment answers: 80 MB instead of 14, and every
    answer written into memory that no recent request touched)."""
    return None if body is None else memoryview(body)[:MAX_BODY].tobytes()


def body_view(raw: bytes | None, size: int) -> BodyView:
    truncated = size > MAX_BODY
    view: BodyView = {"bytes": size, "truncated": truncated}
    if not raw:
        return view
    if not truncated:
        try:
            view["body"] = mask(orjson.loads(raw))
            return view
        except (orjson.JSONDecodeError, TooDeep):
            pass
    view["text"] = mask_text(raw.decode("utf-8", "replace"))
    return view


# -- filters ------------------------------------------------------------------------------------

_STATUS = re.compile(r"([1-5])xx|([1-5]\d\d)", re.IGNORECASE)
_METHOD = re.compile(r"[A-Za-z]{1,10}")
FILTER_PARAMS = ("status", "path", "method", "merchant", "includeTools")
BOOLEAN = {"true": True, "false": False}


@dataclass(frozen=True, slots=True)
class RequestFilters:
    """What a list or a live tail shows. Every field None: everything."""

    status_class: int | None = None  # 4 for `4xx`
    status: int | None = None  # an exact status
    path: str | None = None  # a prefix of the full path, or of the path under /api/v1
    method: str | None = None  # upper case
    merchant: str | None = None
    include_tools: bool = False  # also the requests payorch's own tools made

    def matches(self, row: LogRow) -> bool:
        if row[17] is not None and not self.include_tools:
            return False
        if self.status is not None and row[6] != self.status:
            return False
        if self.status_class is not None and row[6] // 100 != self.status_class:
            return False
        if self.method is not None and row[3] != self.method:
            return False
        if self.merchant is not None and row[7] != self.merchant:
            return False
        path = row[4]
        return self.path is None or (
            path.startswith(self.path) or path.startswith(API_PREFIX + self.path)
        )


def _bad(param: str, message: str) -> ApiError:
    return ApiError(
        "invalid_request",
        f"`{param}` {message}.",
        param=param,
        details={"issues": [{"path": param, "message": message}]},
    )


def parse_filters(query: Mapping[str, str]) -> RequestFilters:
    """The filters of a query string; 400 `invalid_request` naming the first that does not
    parse. An empty parameter is an absent one (as in the API's lists)."""
    status_class = status = None
    raw = query.get("status") or ""
    if raw:
        match = _STATUS.fullmatch(raw)
        if match is None:
            raise _bad("status", "must be a class (2xx, 4xx, 5xx...) or a status (404)")
        status_class = int(match.group(1)) if match.group(1) else None
        status = int(match.group(2)) if match.group(2) else None
    path = query.get("path") or None
    if path is not None and (not path.startswith("/") or len(path) > 200):
        raise _bad("path", "must be a path prefix starting with /, at most 200 characters")
    method = query.get("method") or None
    if method is not None:
        if not _METHOD.fullmatch(method):
            raise _bad("method", "must be an HTTP method (GET, POST...)")
        method = method.upper()
    merchant = query.get("merchant") or None
    if merchant is not None and len(merchant) > 100:
        raise _bad("merchant", "must be a merchant id, at most 100 characters")
    return RequestFilters(status_class, status, path, method, merchant, include_tools(query))


def include_tools(query: Mapping[str, str]) -> bool:
    """`includeTools=true|false` (default false); 400 `invalid_request` for anything else."""
    raw = query.get("includeTools") or "false"
    if raw not in BOOLEAN:
        raise _bad("includeTools", "must be true or false")
    return BOOLEAN[raw]


# -- the log ------------------------------------------------------------------------------------

RowListener = Callable[[LogRow], None]
_API_PATHS = API_PREFIX + "/"


def logged(method: str, path: str) -> bool:
    """Whether a request is recorded: the API and the control plane, but not reads of the log."""
    if path.startswith(_API_PATHS):
        return True
    if not path.startswith("/_sim/"):
        return False
    reading = method in ("GET", "HEAD")
    return not (reading and (path == LOG_PATH or path.startswith(LOG_PATH + "/")))


def visible_to(row: LogRow, merchant_id: str) -> bool:
    """A caller sees the requests its merchant owns (both environments: the row says which);
    a request nobody owns (no credential, an unknown key or token) is shown to nobody."""
    return row[7] == merchant_id


class RequestLog:
    def __init__(self, capacity: int = DEFAULT_CAPACITY, body_budget: int = BODY_BUDGET) -> None:
        if capacity < 0:
            raise ValueError("capacity must be >= 0")
        self.capacity = capacity
        self.body_budget = body_budget
        self._rows: deque[LogRow] = deque()
        self._body_bytes = 0
        self._listeners: list[RowListener] = []

    @property
    def enabled(self) -> bool:
        return self.capacity > 0

    def __len__(self) -> int:
        return len(self._rows)

    def record(self, row: LogRow) -> None:
        if not self.capacity:
            return
        rows = self._rows
        rows.append(row)
        asked, answered = row[12], row[13]  # what is kept of each: `_kept_bytes`, without `min`
        self._body_bytes += (len(asked) if asked else 0) + (len(answered) if answered else 0)
        if len(rows) > self.capacity or self._body_bytes > self.body_budget:
            while len(rows) > self.capacity or (
                self._body_bytes > self.body_budget and len(rows) > 1
            ):
                self._body_bytes -= _kept_bytes(rows.popleft())
        for listener in self._listeners:
            listener(row)

    def clear(self) -> None:
        self._rows.clear()
        self._body_bytes = 0

    def subscribe(self, listener: RowListener) -> Callable[[], None]:
        """Call `listener` with each row as it is recorded; returns the unsubscribe."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def newest_first(self) -> Iterator[Entry]:
        return map(Entry, reversed(self._rows))

    def find(self, merchant_id: str, request_id: str) -> Entry:
        """The entry of `request_id` if the caller may see it, else 404 `request_not_found`."""
        for row in reversed(self._rows):
            if row[0] == request_id:
                if visible_to(row, merchant_id):
                    return Entry(row)
                break
        off = "" if self.capacity else " (the request log is off: --request-log 0)"
        raise ApiError(
            "request_not_found",
            f"No request {request_id} in the log{off}; it keeps the last {self.capacity:,}.",
            param="requestId",
        )

    def page(
        self, merchant_id: str, filters: RequestFilters, limit: int, offset: int
    ) -> tuple[list[Entry], int]:
        """One page of what the caller may see and the filters match, newest first; the total."""
        rows: list[Entry] = []
        total = 0
        end = offset + limit
        for row in reversed(self._rows):
            if visible_to(row, merchant_id) and filters.matches(row):
                if offset <= total < end:
                    rows.append(Entry(row))
                total += 1
        return rows, total
