"""Team mode (design.md 1.10): namespaces by owner, the owners' tokens and quotas, the audit trail.

Who may do what (docs/decisions.md "Team mode"): the admin token everything; an owner token
creates namespaces within its owner's quota and lists, shows and deletes its owner's own, any
other being 404 to it; a namespace's own key shows and deletes that namespace only, as in local
mode, and creates none. The fixture keys are `default`'s keys: never admin.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import hdrs, web

from simulator.domain.errors import ApiError
from simulator.domain.namespaces import DEFAULT, check_name
from simulator.http.keys import NAMESPACE, REQUEST_ID, SETTINGS, WORLDS
from simulator.http.middlewares import auth
from simulator.http.peers import PEER_HEADER, merged, siblings_namespaces
from simulator.http.requests import read_json
from simulator.http.responses import json_response
from simulator.team.lifetimes import extended
from simulator.team.limits import check_owner_quota
from simulator.team.mode import TeamMode
from simulator.team.tokens import Caller, check_owner_name, team_token_of
from simulator.worlds import Namespace, Worlds, not_found


def team_of(request: web.Request) -> TeamMode:
    mode = request.app[WORLDS].team
    if mode is None:
        raise ApiError(
            "team_mode_required",
            "Owners, tokens and the audit trail exist on a team server only "
            "(payorch serve --team).",
        )
    return mode


def caller_of(request: web.Request, mode: TeamMode) -> Caller:
    """The owner or admin token's caller; else the namespace key the middleware checked."""
    token = team_token_of(request.headers.get("Authorization"))
    if token is not None:
        return mode.team.authenticate(token)
    name = request.app[NAMESPACE]
    namespace = request.app[WORLDS].find(name)
    owner = namespace.owner if namespace is not None else None
    return Caller(owner, "key", f"key of namespace {name}", namespace=name)


def may_see(caller: Caller, namespace: Namespace) -> bool:
    if caller.admin:
        return True
    if caller.kind == "key":
        return caller.namespace == namespace.name
    return namespace.owner is not None and namespace.owner == caller.owner


def _record(
    request: web.Request,
    mode: TeamMode,
    caller: Caller,
    action: str,
    namespace: str | None,
    status: int,
    **extra: Any,
) -> None:
    mode.record(caller, action, namespace, status, request.get(REQUEST_ID), **extra)


def _audited(action: str) -> Callable[..., Any]:
    """Audit a management call once its caller is known: its outcome, refusals included."""

    def wrap(handler: Callable[[web.Request, TeamMode, Caller], Any]) -> Any:
        @auth("team")
        async def run(request: web.Request) -> web.StreamResponse:
            mode = team_of(request)
            caller = caller_of(request, mode)
            target = dict(request.match_info) or None  # the owner's name, the token's id
            try:
                response: web.StreamResponse = await handler(request, mode, caller)
            except ApiError as error:
                _record(request, mode, caller, action, None, error.status, details=target)
                raise
            _record(request, mode, caller, action, None, response.status, details=target)
            return response

        run.__name__ = handler.__name__
        return run

    return wrap


def require_admin(caller: Caller) -> None:
    if not caller.admin:
        raise ApiError(
            "admin_required",
            f"Only the admin token may do this; this is a {caller.kind} credential "
            f"({caller.label}).",
        )


# -- namespaces (called by simulator/http/handlers/namespaces.py in team mode) --------------------


async def create_namespace(
    request: web.Request, idle: int | None, expires: float | None
) -> web.Response:
    mode = team_of(request)
    caller = caller_of(request, mode)
    name = check_name(request.match_info["name"])
    worlds = request.app[WORLDS]
    try:
        response = await _create(worlds, mode, caller, name, idle, expires)
    except ApiError as error:
        _record(request, mode, caller, "namespace.create", name, error.status)
        raise
    _record(request, mode, caller, "namespace.create", name, response.status)
    return response


async def _create(
    worlds: Worlds,
    mode: TeamMode,
    caller: Caller,
    name: str,
    idle: int | None,
    expires: float | None,
) -> web.Response:
    if caller.kind == "key":
        raise ApiError(
            "owner_token_required",
            f"On a team server a namespace is made with an owner token or the admin token, "
            f"not a namespace's key ({caller.label}).",
        )
    existing = worlds.find(name)
    if existing is not None and not may_see(caller, existing):
        raise _taken(name)
    admit = None
    owner = caller.owner
    quota = mode.team.quota_of(owner) if owner is not None else None
    if owner is not None and quota is not None:

        def admit() -> None:
            check_owner_quota(owner, len(worlds.owned_by(owner)), quota)

    namespace, created = await worlds.create(
        name, idle, owner=owner, admit=admit, expires_at=expires, quota=quota
    )
    if not created and not may_see(caller, namespace):
        raise _taken(name)
    return json_response(worlds.describe(namespace, keys=True), status=201 if created else 200)


def _taken(name: str) -> ApiError:
    return ApiError(
        "namespace_name_taken",
        f"The name {name!r} is another owner's namespace; choose another.",
        param="name",
    )


async def list_namespaces(request: web.Request) -> web.Response:
    mode = team_of(request)
    caller = caller_of(request, mode)
    worlds = request.app[WORLDS]
    await worlds.sweep()
    if caller.admin:
        found = [worlds.find(n) for n in worlds.names()]
    elif caller.kind == "key":
        found = [worlds.find(request.app[NAMESPACE])]
    else:
        found = list(worlds.owned_by(caller.owner or ""))
    data = [worlds.describe(n, keys=False) for n in found if n is not None]
    peers = request.app[SETTINGS].peers
    if caller.kind != "key" and peers and PEER_HEADER not in request.headers:
        # Behind --workers: the siblings hold the rest, each answering what this caller sees.
        authorization = request.headers.get(hdrs.AUTHORIZATION, "")
        data = merged(data, await siblings_namespaces(peers, authorization=authorization))
    return json_response({"data": data})


def visible(request: web.Request, mode: TeamMode, caller: Caller) -> Namespace:
    """The namespace the path names, if the caller may see it; any other is 404 (no probing)."""
    name = check_name(request.match_info["name"])
    namespace = request.app[WORLDS].find(name)
    if namespace is None or not may_see(caller, namespace):
        raise not_found(name)
    return namespace


async def get_namespace(request: web.Request) -> web.Response:
    mode = team_of(request)
    namespace = visible(request, mode, caller_of(request, mode))
    return json_response(request.app[WORLDS].describe(namespace, keys=True))


async def delete_namespace(request: web.Request) -> web.Response:
    mode = team_of(request)
    caller = caller_of(request, mode)
    name = request.match_info["name"]
    try:
        namespace = visible(request, mode, caller)
        if namespace.name == DEFAULT:
            raise ApiError("forbidden", "The namespace `default` cannot be deleted.", param="name")
        if not await request.app[WORLDS].delete(namespace.name):
            raise not_found(namespace.name)
    except ApiError as error:
        _record(request, mode, caller, "namespace.delete", name, error.status)
        raise
    _record(request, mode, caller, "namespace.delete", name, 204, owner=namespace.owner)
    return web.Response(status=204)


async def extend_namespace(request: web.Request, body: dict[str, Any]) -> web.Response:
    mode = team_of(request)
    caller = caller_of(request, mode)
    name = request.match_info["name"]
    worlds = request.app[WORLDS]
    try:
        namespace = visible(request, mode, caller)
        if namespace.name == DEFAULT:
            raise ApiError("forbidden", "The namespace `default` has no expiry.", param="name")
        at = extended(body, namespace.expires_at, worlds.now())
        await worlds.extend(namespace, at)
    except ApiError as error:
        _record(request, mode, caller, "namespace.extend", name, error.status)
        raise
    _record(request, mode, caller, "namespace.extend", name, 200, owner=namespace.owner)
    return json_response(worlds.describe(namespace, keys=True))


# -- owners and tokens ------------------------------------------------------------------------


@_audited("token.create")
async def create_token(request: web.Request, mode: TeamMode, caller: Caller) -> web.Response:
    require_admin(caller)
    body = await read_json(request)
    created = mode.team.create_token(
        check_owner_name(body.get("owner")),
        label=body.get("label"),
        kind=body.get("kind", "person"),
        max_namespaces=body.get("maxNamespaces"),
        expires_in=body.get("expiresInSeconds"),
    )
    return json_response(created, status=201)


@auth("team")
async def list_tokens(request: web.Request) -> web.Response:
    mode = team_of(request)
    caller = caller_of(request, mode)
    require_admin(caller)
    return json_response({"data": mode.team.tokens()})


@_audited("token.revoke")
async def revoke_token(request: web.Request, mode: TeamMode, caller: Caller) -> web.Response:
    require_admin(caller)
    return json_response(mode.team.revoke(request.match_info["id"]))


@auth("team")
async def list_owners(request: web.Request) -> web.Response:
    mode = team_of(request)
    caller = caller_of(request, mode)
    require_admin(caller)
    worlds = request.app[WORLDS]
    data = [
        {**mode.team.owner_view(name), "namespaces": worlds.owned_count(name)}
        for name in mode.team.owner_names()
    ]
    return json_response({"data": data})


@_audited("owner.quota")
async def set_owner(request: web.Request, mode: TeamMode, caller: Caller) -> web.Response:
    require_admin(caller)
    body = await read_json(request)
    owner = check_owner_name(request.match_info["name"])
    return json_response(mode.team.set_quota(owner, body.get("maxNamespaces")))


@auth("team")
async def whoami(request: web.Request) -> web.Response:
    mode = team_of(request)
    caller = caller_of(request, mode)
    view = caller.view()
    if caller.kind == "key":
        view["namespace"] = caller.namespace  # the TUI shows its namespace's owner and quota
    if caller.owner is not None:
        worlds = request.app[WORLDS]
        view.update(
            maxNamespaces=mode.team.quota_of(caller.owner),
            namespaces=worlds.owned_count(caller.owner),
        )
    return json_response(view)


# -- the audit trail --------------------------------------------------------------------------


@auth("team")
async def read_audit(request: web.Request) -> web.Response:
    """`GET /_sim/audit[?namespace=N][&since=ISO][&limit=N]`: the admin reads every entry, an
    owner those of its own namespaces, oldest first (the last `limit`, 1000 by default)."""
    mode = team_of(request)
    caller = caller_of(request, mode)
    if caller.kind == "key":
        require_admin(caller)
    namespace = request.query.get("namespace")
    since = request.query.get("since")
    try:
        limit = int(request.query.get("limit", "1000"))
        if limit < 1:
            raise ValueError
    except ValueError:
        raise ApiError(
            "invalid_request", "`limit` is a whole number, at least 1.", param="limit"
        ) from None
    data = [
        entry
        for entry in mode.audit.entries()
        if (caller.admin or entry.get("owner") == caller.owner)
        and (namespace is None or entry.get("namespace") == namespace)
        and (since is None or entry.get("at", "") >= since)
    ]
    return json_response({"data": data[-limit:]})
