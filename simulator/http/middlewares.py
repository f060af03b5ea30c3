"""Request id, the one error envelope, authentication and OpenAPI validation, for every route,
and the request log's entry once a request is answered.

One aiohttp middleware runs the steps in order: each middleware is a coroutine layer (and
aiohttp adds one of its own) on every request, which for a payment's creation cost as much as
its authentication. The front calls it directly (simulator/http/front.py), without aiohttp's
chain; what a route asks (its credential, its operation) is found once per route (`_Plan`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from functools import partial
from pathlib import Path
from time import perf_counter
from time import time as wall_time
from typing import Any, Literal, NamedTuple

from aiohttp import web
from multidict import istr

from simulator.domain.auth import Principal, check_environment, require_sandbox, require_secret
from simulator.domain.coverage import TOOL_OF_REQUEST
from simulator.domain.errors import ApiError
from simulator.domain.ids import token_hex
from simulator.domain.requestlog import (
    KEPT_HEADERS,
    MAX_BODY,
    MAX_TOOL,
    TOOL_HEADER,
    RequestLog,
    logged,
)
from simulator.events.bus import EVENTS_OF_REQUEST
from simulator.http.aiohttp_private import app_state, request_state
from simulator.http.idempotency import REPLAYED_HEADER
from simulator.http.keys import (
    AUTHENTICATOR,
    BODY,
    CLOCK,
    CONTEXT,
    IN_FLIGHT,
    METRICS,
    NAMESPACE,
    OPERATIONS,
    PRINCIPAL,
    RATE_LIMITER,
    RAW_BODY,
    REQUEST_ID,
    REQUEST_IDS,
    REQUEST_LOG,
    RESET,
    ROUTE_PLANS,
    SETTINGS,
    STOPPING,
    STORE,
)
from simulator.http.requests import base_url, body_at_hand, parse_body, read_body, receive_body
from simulator.http.responses import REQUEST_ID_HEADER, Answer, error_response
from simulator.http.server import ConnectionHandler, log_refused
from simulator.openapi.validation import Operation, Operations
from simulator.team.tokens import team_token_of

log = logging.getLogger(__name__)


# "team": team mode's management routes, where an owner or admin token (simulator/team/) is
# the handler's to check; any other credential is checked as "sandbox".
AuthLevel = Literal["none", "any", "secret", "sandbox", "team"]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# The merchant and environment that own a request made without a credential, from the object
# it names (None: nobody's); see `owned_by`.
Owner = tuple[str, str] | None
OwnerResolver = Callable[[web.Request], Owner]
NOBODY: tuple[None, None] = (None, None)


def auth(level: AuthLevel) -> Callable[[Handler], Handler]:
    """Declare what credential a handler needs; the auth middleware enforces it."""

    def mark(handler: Handler) -> Handler:
        handler.auth_level = level  # type: ignore[attr-defined]  # a mark on the handler function, read by the auth middleware
        return handler

    return mark


def owned_by(resolve: OwnerResolver) -> Callable[[Handler], Handler]:
    """Declare how to tell who owns a request to a handler that takes no credential (a checkout
    session's token, a provider page's payment, the key of POST /auth/token): the request log
    and coverage show such a request to that merchant only. Called once the request is answered
    (or refused), so it must not raise and should cost a look-up."""

    def mark(handler: Handler) -> Handler:
        handler.owner_of = resolve  # type: ignore[attr-defined]  # read by `request_owner`
        return handler

    return mark


def request_owner(request: web.Request) -> tuple[str | None, str | None]:
    """Who owns the request: the credential's merchant and environment (checked by the route's
    authentication, else now: an unknown route, a route that takes none), else the handler's
    `owned_by` answer, else nobody."""
    principal = request_state(request).get(PRINCIPAL)
    if principal is not None:
        return principal.merchant.id, principal.environment
    if "Authorization" in request.headers:
        app = request.app
        try:
            principal = app[AUTHENTICATOR].authenticate(
                request.headers["Authorization"], app[CLOCK].timestamp()
            )
        except ApiError:
            pass  # an unknown or expired credential: owned as if none was sent
        else:
            return principal.merchant.id, principal.environment
    resolve = getattr(request.match_info.handler, "owner_of", None)
    if resolve is None:
        return NOBODY
    try:
        owner = resolve(request)
    except Exception:  # an owner that cannot be told is nobody's
        log.debug("no owner for %s %s", request.method, request.path, exc_info=True)
        return NOBODY
    return owner if owner is not None else NOBODY


def principal_of(request: web.Request) -> Principal:
    principal: Principal = request_state(request)[PRINCIPAL]  # a dict's item: no method call
    return principal


class _Plan(NamedTuple):
    """What a route asks of every request to it, found once per route (`_plan_of`)."""

    level: AuthLevel  # the credential its handler declared (`auth`)
    operation: Operation | None  # its OpenAPI operation, with the validators
    static: web.StaticResource | None  # a static file route: the file is checked first


@web.middleware
async def request_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """The request id and the one error envelope around authentication, validation and the
    handler; then the request log's entry (when the log is on and the path is logged)."""
    return await serve(request, handler)


def serve(request: web.Request, handler: Handler) -> Coroutine[Any, Any, web.StreamResponse]:
    """`request_middleware`'s work, as what to await: the front (simulator/http/front.py) hands
    it to aiohttp as the request's handling, with no coroutine of the middleware's own around
    the one that answers, logged or not (a tool's request has `_tagged` around it)."""
    # The request's and the app's own dicts, read and written directly: their mapping methods
    # are Python calls (and `request.get` of a missing key raises and catches a KeyError).
    state: dict[Any, Any] = request_state(request)
    # `request.app` is three calls deep in aiohttp: taken once, handed to each step.
    services: dict[Any, Any] = app_state(request.app)
    seeded = services[REQUEST_IDS]
    request_id = "req_" + (token_hex(12) if seeded is None else seeded.randbytes(12).hex())
    state[REQUEST_ID] = request_id
    request_log: RequestLog = services[REQUEST_LOG]
    tag = request.headers.get(_TOOL_HEADER)
    tool = tag[:MAX_TOOL] if tag else None
    journal = request_log if request_log.capacity and logged(request.method, request.path) else None
    answer = _answer(request, state, services, handler, request_id, journal, tool)
    metrics = services[METRICS]
    if metrics is not None:  # team mode: counted and timed (GET /metrics)
        answer = metrics.timed(request, services[NAMESPACE], answer)
    return _tagged(tool, answer) if tool is not None else answer


# Header names as `istr`: a case-insensitive look-up of one is a third of a `str`'s (whose
# case-folded form is made per look-up).
_TOOL_HEADER = istr(TOOL_HEADER)
_KEPT_HEADERS = tuple((name, istr(name)) for name in KEPT_HEADERS)
_IDEMPOTENCY_KEY, _SANDBOX_SIMULATE = (key for _, key in _KEPT_HEADERS)
_REPLAYED_HEADER = istr(REPLAYED_HEADER)


async def _tagged(tool: str, answer: Coroutine[Any, Any, web.StreamResponse]) -> web.StreamResponse:
    """A payorch tool's request: coverage counts what it reaches apart (`TOOL_OF_REQUEST`)."""
    tagging = TOOL_OF_REQUEST.set(tool)
    try:
        return await answer
    finally:
        TOOL_OF_REQUEST.reset(tagging)


async def _answer(
    request: web.Request,
    state: dict[Any, Any],
    services: dict[Any, Any],
    handler: Handler,
    request_id: str,
    journal: RequestLog | None,
    tool: str | None,
) -> web.StreamResponse:
    """The answer; with a `journal` (the log is on and the path logged), its row once answered.

    One coroutine whether logged or not: a wrapper around it for the log was a coroutine frame
    and an await more per logged request."""
    if journal is not None:
        at, started = wall_time(), perf_counter()
        sim_at = services[CLOCK].timestamp_at(at)
    stopping = services[STOPPING]
    if not request.content.is_eof() or not services[RESET].gate_open or stopping.is_set():
        held = await _held(request, services)
        if held is not None:
            if journal is not None:
                _record(journal, request, state, held, request_id, at, sim_at, started, None, tool)
            return held
    if journal is not None:
        events: list[tuple[str, str]] = []
        collecting = EVENTS_OF_REQUEST.set(events)
    task, in_flight = asyncio.current_task(), services[IN_FLIGHT]
    if task is not None:
        in_flight[task] = request
    try:
        plan = _admitted(request, state, services)
        if plan.static is not None:
            await _require_static_file(request, plan.static)
        operation = plan.operation
        if operation is not None and operation.body is not None:
            raw = body_at_hand(request)
            body = (
                await read_body(request, optional=not operation.body_required)
                if raw is None  # still to be read (or to be refused): the general way
                else parse_body(request, raw, optional=not operation.body_required)
            )
            state[BODY] = operation.check_body(body, partial(base_url, request))
        response = await handler(request)
    except ApiError as error:
        response = _render(error, request)
    except asyncio.CancelledError as cancelled:
        response = _answer_cancelled(cancelled, request, stopping, task)
    except web.HTTPException as exc:
        response = _render(_from_http(exc, request), request)
    except Exception:
        response = _internal_error(request, request_id)
    else:
        response.headers[REQUEST_ID_HEADER] = request_id  # an error's envelope has it already
    finally:
        if journal is not None:
            EVENTS_OF_REQUEST.reset(collecting)
        _settle(services, task, in_flight)
    if journal is not None:
        _record(journal, request, state, response, request_id, at, sim_at, started, events, tool)
    return response


def _admitted(request: web.Request, state: dict[Any, Any], services: dict[Any, Any]) -> _Plan:
    """The route's plan, with its credential and query checked (a static route has neither)."""
    route = request.match_info.route
    plans = services[ROUTE_PLANS]
    plan = plans.get(route)
    if plan is None:
        plan = _plan_of(request, route, services[OPERATIONS])
        if route.resource is not None:  # not aiohttp's 404/405, a route made per request
            plans[route] = plan
    if plan.level != "none":
        _authenticate(request, state, services, plan.level)
    operation = plan.operation
    if operation is not None and "?" in request.raw_path:  # most requests (every POST) have none
        operation.check_query(request.query)
    return plan


def _answer_cancelled(
    cancelled: asyncio.CancelledError,
    request: web.Request,
    stopping: asyncio.Event,
    task: asyncio.Task[Any] | None,
) -> web.Response:
    if not stopping.is_set():
        raise cancelled  # the client went away: nobody to answer
    # The server is stopping and this request outlived the grace period. Its state changes
    # are all-or-nothing (no await inside a store batch), so it is answered, not dropped.
    if task is not None:
        task.uncancel()
    return _render(_stopping_error(), request)


def _internal_error(request: web.Request, request_id: str) -> web.Response:
    log.exception("unhandled error on %s %s (%s)", request.method, request.path, request_id)
    return error_response(ApiError("internal_error"), request_id)


def _settle(
    services: dict[Any, Any],
    task: asyncio.Task[Any] | None,
    in_flight: dict[asyncio.Task[Any], web.Request],
) -> None:
    """Once answered, whatever the answer. A production charge the cascade refused is rolled
    back with its request's batch, yet the calls it made to the providers happened: their
    counts and decline-rate draws (so the next charge gets the next draw) are written in a
    batch of their own."""
    world = services[CONTEXT].providers
    if world.has_unsaved:
        with services[STORE].batch():
            world.flush()
    if task is not None:
        in_flight.pop(task, None)


async def _held(request: web.Request, services: dict[Any, Any]) -> web.Response | None:
    """Before a request is answered, rarely: its body still arriving (a small one comes whole),
    a reset running (the request runs after it, in the new world), the server stopping. The
    refusal to answer instead, if any."""
    if not request.content.is_eof():
        refusal = await receive_body(request, services[SETTINGS].body_timeout)
        if refusal is not None:
            return _refuse_connection(refusal, request)
    reset = services[RESET]
    if not reset.gate_open:
        if reset.swapping and getattr(request.match_info.handler, "refuses_to_wait", False):
            return _render(ApiError("restore_in_progress"), request)
        await reset.wait_for_gate()
    if services[STOPPING].is_set():
        return _render(_stopping_error(), request)
    return None


def _plan_of(request: web.Request, route: Any, operations: Operations) -> _Plan:
    resource = route.resource
    return _Plan(
        getattr(route.handler, "auth_level", "none"),
        operations.find(request.method, resource.canonical) if resource is not None else None,
        resource if isinstance(resource, web.StaticResource) else None,
    )


def _refuse_connection(error: ApiError, request: web.Request) -> web.Response:
    """A request whose body could not be had (too slow, unreadable): answered, one line in the
    server's output, and its connection closed without reading the rest."""
    why = (error.details or {}).get("reason") or error.message
    log_refused(
        request.remote, error.status, f"{request.method} {request.path}: {why}", request[REQUEST_ID]
    )
    protocol = request.protocol
    if isinstance(protocol, ConnectionHandler):
        protocol.drop_after_response()
    return _render(error, request)


def _record(
    journal: RequestLog,
    request: web.Request,
    state: dict[Any, Any],
    response: web.StreamResponse,
    request_id: str,
    at: float,
    sim_at: float,
    started: float,
    events: list[tuple[str, str]] | None,
    tool: str | None,
) -> None:
    """One row: references to what the request already holds, nothing decoded; the owner as it
    is now (the credential's merchant, else the object's: `request_owner`). The row is built
    here, in `LogRow`'s order (what `make_row` makes, without a call of 16 arguments)."""
    principal = state.get(PRINCIPAL)
    if principal is not None:  # most requests: the credential's (`request_owner`)
        merchant_id, environment = principal.merchant.id, principal.environment
    else:
        merchant_id, environment = request_owner(request)
    headers = request.headers
    kept: tuple[tuple[str, str], ...] = ()
    if _IDEMPOTENCY_KEY in headers or _SANDBOX_SIMULATE in headers:  # rarely: skip the loop
        kept = _kept_headers(headers)
    asked, asked_kept = _asked_body(state)
    answered, answered_kept = _answered_body(response)
    journal.record(
        (
            request_id,
            at,
            sim_at,
            request.method,
            request.path,
            # A query string is yarl's work to decode: only when there is one.
            request.query_string if "?" in request.raw_path else "",
            response.status,
            merchant_id,
            environment,
            (perf_counter() - started) * 1000,
            _REPLAYED_HEADER in response.headers,
            kept,
            asked_kept,
            answered_kept,
            len(asked) if asked else 0,
            len(answered) if answered else 0,
            _own_events(events, merchant_id) if events else (),
            tool,
        )
    )


# The bodies as `requestlog._cut` keeps them (cut at MAX_BODY; an answer copied, for the reason
# it gives), at less cost.


def _asked_body(state: dict[Any, Any]) -> tuple[Any, bytes | None]:
    """The request body and what the row keeps of it: a body read whole is an exact-size
    `bytes` of the parser's, immutable, kept as it is."""
    asked = state.get(RAW_BODY)
    if asked is not None and (type(asked) is not bytes or len(asked) > MAX_BODY):
        return asked, memoryview(asked)[:MAX_BODY].tobytes()
    return asked, asked


def _answered_body(response: web.StreamResponse) -> tuple[bytes | None, bytes | None]:
    """The answer's body (None: a stream, a file) and the row's copy of it."""
    # `Answer` first: `isinstance` of aiohttp's responses goes through an ABC's check.
    answered = (
        response.body if type(response) is Answer or isinstance(response, web.Response) else None
    )
    if not isinstance(answered, bytes):
        return None, None
    if len(answered) <= MAX_BODY:
        return answered, memoryview(answered).tobytes()
    return answered, memoryview(answered)[:MAX_BODY].tobytes()


def _own_events(events: list[tuple[str, str]], merchant_id: str | None) -> tuple[str, ...]:
    own: list[str] = []
    for event_id, owner in events:  # a loop: a comprehension is a function call here
        if owner == merchant_id:
            own.append(event_id)
    return tuple(own)


def _kept_headers(headers: Any) -> tuple[tuple[str, str], ...]:
    return tuple((name, headers[key]) for name, key in _KEPT_HEADERS if key in headers)


def _stopping_error() -> ApiError:
    return ApiError(
        "service_unavailable",
        "The server is shutting down; retry the request.",
        headers={"Retry-After": "1", "Connection": "close"},
    )


def _render(error: ApiError, request: web.Request) -> web.Response:
    """The error's envelope; one whose details cannot be written is still answered, as a 500."""
    request_id = request[REQUEST_ID]
    request.app[CONTEXT].coverage.error(error.code, error.status, request_owner(request)[0])
    try:
        return error_response(error, request_id)
    except Exception:
        log.exception("cannot render %s on %s (%s)", error.code, request.path, request_id)
        return error_response(ApiError("internal_error"), request_id)


async def _require_static_file(request: web.Request, resource: web.StaticResource) -> None:
    """A static path that names no file is a 404 in the envelope.

    aiohttp's static handler answers a missing file with a FileResponse that only turns into an
    empty-bodied 404 while it is sent, and a directory with 403 Forbidden, both past this
    middleware; checking first keeps every error in the one envelope.
    """
    directory = Path(resource.get_info()["directory"])
    target = directory / request.match_info.get("filename", "")
    if not await asyncio.to_thread(_is_file_inside, target, directory):
        raise ApiError("route_not_found", f"No file at {request.path}.")


def _is_file_inside(target: Path, directory: Path) -> bool:
    resolved = target.resolve()
    return resolved.is_relative_to(directory.resolve()) and resolved.is_file()


def _from_http(exc: web.HTTPException, request: web.Request) -> ApiError:
    if exc.status == 404:
        return ApiError("route_not_found", f"No route {request.method} {request.path}.")
    if exc.status == 405:
        allowed = sorted(getattr(exc, "allowed_methods", ()) or ())
        error = ApiError(
            "method_not_allowed",
            f"{request.method} is not allowed on {request.path}; use {', '.join(allowed)}.",
            details={"allowed": allowed},
        )
        error.headers["Allow"] = ", ".join(allowed)
        return error
    if exc.status == 413:
        return ApiError("payload_too_large")
    if isinstance(exc, web.HTTPRedirection):
        raise exc
    return ApiError("invalid_request", exc.reason or "Bad request.")


def _authenticate(
    request: web.Request, state: dict[Any, Any], services: dict[Any, Any], level: AuthLevel
) -> None:
    """The credential the handler declared (`auth`), checked and kept as the request's principal."""
    if level == "team":
        if services[SETTINGS].team and team_token_of(request.headers.get("Authorization")):
            return  # the handler's to check (simulator/http/handlers/team.py)
        level = "sandbox"
    authenticator = services[AUTHENTICATOR]
    authorization = request.headers.get("Authorization")
    principal = authenticator.known(authorization) or authenticator.authenticate(
        authorization, services[CLOCK].timestamp()
    )
    # Kept at once, before the checks: the request log names the merchant of a request its
    # credential was refused for (production_key_refused, rate_limited...).
    state[PRINCIPAL] = principal
    check_environment(principal)
    if level == "sandbox":
        require_sandbox(principal)
        require_secret(principal)
    elif level == "secret":
        require_secret(principal)
    limiter = services[RATE_LIMITER]
    if limiter is not None:
        limiter.take(principal.credential_id, principal.merchant.tier)
