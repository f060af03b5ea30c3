"""The front: which world serves a request, by the routing rule of simulator/domain/namespaces.py.

The front application is the world `default` too. A request whose path has no `/ns/{name}`
prefix and whose credential names no namespace (every request of today's clients) goes straight
to aiohttp's own handling, at the cost of one substring test on its `Authorization` header.
Any other is handed to its namespace's world: the one URL table (the front's router) resolves it,
the world becomes the request's `request.app`, and the world's middleware and the handler run
as they do in `default`. Handlers never know which world they serve.

With a prefix the request is cloned with the prefix cut from its path, so that routes, the
request log and error messages read the same in every namespace; the world's `URL_PREFIX` puts
the prefix back into every URL it hands out (`base_url`), however the request was routed.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Awaitable, Callable, Coroutine
from functools import partial
from pathlib import Path
from typing import Any

from aiohttp import hdrs, web
from aiohttp.web_urldispatcher import AbstractRoute, UrlMappingMatchInfo
from yarl import URL

from payorch.vocabulary import CREDENTIAL_IN_BODY_PATHS
from simulator.domain.errors import ApiError
from simulator.domain.namespaces import (
    DEFAULT,
    PATH_PREFIX,
    of_authorization,
    of_body,
    refusal_before_loading,
    split_path,
    valid_name,
)
from simulator.http.aiohttp_private import AIOHTTP_HANDLE, has_subapps, set_match_info
from simulator.http.keys import REQUEST_URL_PREFIX, SETTINGS, STORE, URL_PREFIX, WORLDS
from simulator.http.middlewares import request_middleware, serve
from simulator.http.requests import receive_body
from simulator.http.responses import REQUEST_ID_HEADER, new_request_id, refusal_response
from simulator.http.server import Application, ConnectionHandler, log_refused
from simulator.team.limits import NamespaceRate, StorageQuota
from simulator.team.mode import audited_control
from simulator.team.tokens import Caller
from simulator.worlds import Worlds

# The two endpoints that carry their credential in the body (keys, or a refresh token).
CREDENTIAL_IN_BODY = frozenset(CREDENTIAL_IN_BODY_PATHS)
AUTH_PATHS = "/api/v1/auth/"
# aiohttp's own request handling, called without `super()` (one object less per request).
_OWN_HANDLE = AIOHTTP_HANDLE

with warnings.catch_warnings():  # see simulator/http/server.py: aiohttp warns on subclasses
    warnings.simplefilter("ignore", DeprecationWarning)

    class FrontApplication(Application):
        """The server's application: `default`'s world, and the door to every other one."""

        ATTRS = Application.ATTRS | {
            "_direct",
            "_plain_routes",
            "_namespace_rate",
            "_storage_quota",
        }
        _direct = False
        _namespace_rate: NamespaceRate | None = None
        _storage_quota: StorageQuota | None = None

        def pre_freeze(self) -> None:
            super().pre_freeze()
            # `request_middleware` alone (as `create_app` makes it): `_in_default` calls it
            # itself, without aiohttp's chain of partials and its middleware of its own (which
            # sets `match_info.current_app`, already this app when there are no sub-apps).
            self._direct = tuple(self.middlewares) == (request_middleware,) and not has_subapps(
                self
            )
            # The route the router found for a method and a path that names no variable (a
            # plain resource: POST /api/v1/payments), by method and path. The router's answer
            # depends on nothing else (no sub-app matches on the host here), and the routes
            # are frozen: the walk over the URL's parts and two coroutines are made once.
            self._plain_routes: dict[tuple[str, str], AbstractRoute] = {}
            settings = self[SETTINGS]
            if settings.namespace_rps:
                self._namespace_rate = NamespaceRate(
                    settings.namespace_rps, settings.namespace_burst
                )
            if settings.namespace_max_objects or settings.namespace_max_bytes:
                self._storage_quota = StorageQuota(
                    settings.namespace_max_objects, settings.namespace_max_bytes
                )

        def request_wrapper(self) -> Callable[[Any], Any] | None:
            worlds = self[WORLDS]
            if worlds.team is None:
                return None
            return lambda handle: partial(_audited, handle, worlds)  # team mode: audited

        def dispatch(self, request: web.Request) -> Coroutine[Any, Any, web.StreamResponse]:
            """A plain function returning the coroutine to await: `default`'s requests go to
            aiohttp's own `_handle` with no coroutine frame of ours in between."""
            if request.raw_path.startswith(PATH_PREFIX):
                return self._prefixed(request, request.rel_url.raw_path)
            authorization = request.headers.get(hdrs.AUTHORIZATION)
            if authorization is not None and "ns_" in authorization:
                name = of_authorization(authorization)
                if name is not None:
                    return self._in_namespace(request, name, prefixed=False)
            if request.method == hdrs.METH_POST and request.raw_path.startswith(AUTH_PATHS):
                return self._by_body(request)
            return self._in_default(request)

        def _in_default(self, request: web.Request) -> Coroutine[Any, Any, web.StreamResponse]:
            if not self._direct:
                return _OWN_HANDLE(self, request)
            route = self._plain_routes.get((request.method, request.rel_url.path_safe))
            if route is None or request.headers.get(hdrs.EXPECT):
                return self._direct_handle(request)
            # A plain path the router answered before: its route, and the request's handling
            # (`serve`) handed to aiohttp with no coroutine of the front's in between.
            match_info = UrlMappingMatchInfo({}, route)
            match_info.add_app(self)
            match_info.freeze()
            set_match_info(request, match_info)
            return serve(request, match_info.handler)

        async def _direct_handle(self, request: web.Request) -> web.StreamResponse:
            """aiohttp's own `_handle` for an app whose one middleware is ours: the route
            resolved, then `request_middleware` called with its handler."""
            match_info = await self.router.resolve(request)
            if type(match_info) is UrlMappingMatchInfo and not match_info:
                self._plain_routes[request.method, request.rel_url.path_safe] = match_info.route
            match_info.add_app(self)
            match_info.freeze()
            set_match_info(request, match_info)
            if request.headers.get(hdrs.EXPECT):
                response = await match_info.expect_handler(request)
                await request.writer.drain()
                if response is not None:
                    return response
            return await serve(request, match_info.handler)

        async def _by_body(self, request: web.Request) -> web.StreamResponse:
            name = None
            if request.rel_url.raw_path in CREDENTIAL_IN_BODY:
                name, refused = await _body_namespace(request, self[SETTINGS].body_timeout)
                if refused is not None:
                    return refused
            if name is None:
                return await self._in_default(request)
            return await self._in_namespace(request, name, prefixed=False)

        async def _prefixed(self, request: web.Request, path: str) -> web.StreamResponse:
            split = split_path(path)
            assert split is not None
            name, rest = split
            rel_url = URL.build(
                path=rest, query_string=request.rel_url.raw_query_string, encoded=True
            )
            request = request.clone(rel_url=rel_url)
            credential = of_authorization(request.headers.get(hdrs.AUTHORIZATION))
            if credential is None and rest in CREDENTIAL_IN_BODY and request.method == "POST":
                credential, refused = await _body_namespace(request, self[SETTINGS].body_timeout)
                if refused is not None:
                    return refused
            if credential is not None and credential != name:
                return refusal_response(
                    ApiError(
                        "invalid_api_key",
                        f"This credential is namespace {credential!r}'s, used under "
                        f"{PATH_PREFIX}{name}/.",
                    )
                )
            return await self._in_namespace(request, name, prefixed=True)

        async def _in_namespace(
            self, request: web.Request, name: str, *, prefixed: bool
        ) -> web.StreamResponse:
            if name == DEFAULT:
                return await self._in_default(request)
            worlds = self[WORLDS]
            # Nothing is loaded (nor kept) for a name that does not exist, nor for a request its
            # credential cannot pass: loading is the costly part (issue 31).
            if not valid_name(name) or worlds.find(name) is None:
                return refusal_response(_unknown(name, prefixed=prefixed))
            match_info = await self.router.resolve(request)
            if getattr(match_info.handler, "auth_level", "none") != "none":
                authorization = request.headers.get(hdrs.AUTHORIZATION)
                refused = refusal_before_loading(authorization, worlds.catalog_of(name), name)
                if refused is not None:
                    return refusal_response(refused)
            try:
                world = await worlds.enter(name)
            except ApiError as error:  # every world in memory busy: 503, retry
                return refusal_response(error)
            if world is None:  # deleted meanwhile
                return refusal_response(_unknown(name, prefixed=prefixed))
            rate = self._namespace_rate
            if rate is not None:
                refused = rate.take(name)
                if refused is not None:
                    worlds.leave(name)
                    return refusal_response(refused)
            quota = self._storage_quota
            if quota is not None and _grows(request):
                refused = quota.check(
                    name, partial(_objects, world), self.namespace_directory(name)
                )
                if refused is not None:
                    worlds.leave(name)
                    return refusal_response(refused)
            prefix = request[REQUEST_URL_PREFIX] = world[URL_PREFIX]
            try:
                return _prefix_links(await self._in_world(world, request, match_info), prefix)
            except web.HTTPRedirection as redirect:
                location = redirect.headers.get(hdrs.LOCATION, "")
                if _root_relative(location):
                    redirect.headers[hdrs.LOCATION] = prefix + location
                raise
            finally:
                worlds.leave(name)

        def namespace_directory(self, name: str) -> Path | None:
            data_dir = self[SETTINGS].data_dir
            return data_dir / "namespaces" / name if data_dir is not None else None

        async def _in_world(
            self, world: web.Application, request: web.Request, match_info: UrlMappingMatchInfo
        ) -> Any:
            """aiohttp's own `_handle`, with `world` as the request's application."""
            match_info.add_app(world)
            match_info.freeze()
            set_match_info(request, match_info)  # what aiohttp's own _handle sets
            if request.headers.get(hdrs.EXPECT):
                response = await match_info.expect_handler(request)
                await request.writer.drain()
                if response is not None:
                    return response
            handler = match_info.handler
            for middleware in reversed(world.middlewares):
                handler = partial(middleware, handler=handler)  # new-style middlewares
            return await handler(request)


# Writes that free room stay allowed to a namespace at its storage quota.
_FREEING = ("/_sim/reset", "/_sim/state/")


def _grows(request: web.Request) -> bool:
    """A write that may add objects or bytes (a namespace at its storage quota is refused it)."""
    if request.method not in (hdrs.METH_POST, hdrs.METH_PUT, hdrs.METH_PATCH):
        return False
    path = request.rel_url.raw_path
    return not (path.startswith(_FREEING) and (path == "/_sim/reset" or path.endswith("/restore")))


def _objects(world: web.Application) -> int:
    store = world[STORE]
    return sum(len(store.table(name)) for name in store.table_names())


async def _audited(
    handle: Callable[[web.Request], Awaitable[web.StreamResponse]],
    worlds: Worlds,
    request: web.Request,
) -> web.StreamResponse:
    """Team mode: a world-changing control call's audit entry, on disk before it is answered."""
    response = await handle(request)
    team = worlds.team
    path = request.rel_url.raw_path
    split = split_path(path)
    if split is not None:
        name, path = split
    else:
        name = of_authorization(request.headers.get(hdrs.AUTHORIZATION)) or DEFAULT
    if team is not None and audited_control(request.method, path):
        found = worlds.find(name) if valid_name(name) else None
        owner = found.owner if found is not None else None
        caller = Caller(owner, "key", f"key of namespace {name}", namespace=name)
        request_id = response.headers.get(REQUEST_ID_HEADER)
        team.record(caller, f"{request.method} {path}", name, response.status, request_id)
    return response


async def _body_namespace(
    request: web.Request, timeout: float
) -> tuple[str | None, web.Response | None]:
    """The namespace named by a credential in an auth endpoint's body, read once (aiohttp keeps
    the bytes for the handler) within the server's body deadline, as every body is; or the
    refusal to answer when it does not arrive. A body without a length, or over the limit, is
    not read here: `default` answers it (413 for one too large, as before)."""
    length = request.content_length
    if length is None or length > request.client_max_size:
        return None, None
    refusal = await receive_body(request, timeout)
    if refusal is not None:
        return None, _refuse_connection(refusal, request)
    return of_body(await request.read()), None


def _refuse_connection(error: ApiError, request: web.Request) -> web.Response:
    """A body that could not be had (too slow, unreadable), answered as the request middleware
    answers one: one line in the server's output, the connection closed unread."""
    request_id = new_request_id()
    why = (error.details or {}).get("reason") or error.message
    log_refused(request.remote, error.status, f"{request.method} {request.path}: {why}", request_id)
    protocol = request.protocol
    if isinstance(protocol, ConnectionHandler):
        protocol.drop_after_response()
    return refusal_response(error, request_id)


def _unknown(name: str, *, prefixed: bool) -> ApiError:
    if prefixed:
        return ApiError("namespace_not_found", f"No namespace {name!r} on this server.")
    return ApiError("invalid_api_key", f"Unknown or deleted namespace {name!r}.")


def _root_relative(url: str) -> bool:
    return url.startswith("/") and not url.startswith("//")


# A root-relative link of a page (its forms, the way back, the language switch, the status the
# script polls, the provider's buttons), which must stay in the page's namespace.
_PAGE_LINK = re.compile(rb'((?:href|action|src|data-status-url)=")/(?!/)')


def _prefix_links(response: web.StreamResponse, prefix: str) -> web.StreamResponse:
    """A namespace's HTML page with its root-relative links under `/ns/{name}`. The pages write
    paths from the root (as `default` serves them); rather than teach every page its prefix,
    the one place that knows it puts it in. JSON answers carry whole URLs (`base_url`)."""
    if (
        isinstance(response, web.Response)
        and response.content_type == "text/html"
        and isinstance(response.body, bytes)
    ):
        response.body = _PAGE_LINK.sub(rb"\1" + prefix.encode() + b"/", response.body)
    return response
