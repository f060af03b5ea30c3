"""Managing namespaces (design.md 1.6: `/_sim/namespaces`): create, list, show, delete.
On a team server (design.md 1.10) simulator/http/handlers/team.py answers instead.

Who may do what (docs/decisions.md): any sandbox secret credential creates; `default`'s sees and
deletes any namespace, another namespace's credential only its own; `default` is never deleted.
A `PUT` of a name that exists answers as a `GET` by the same credential would: a namespace's keys
are learnt only by whoever created it (in the 201), by its own credentials and by `default`'s.
"""

from __future__ import annotations

from aiohttp import web

from simulator.domain.errors import ApiError
from simulator.domain.namespaces import DEFAULT, check_name
from simulator.http.handlers import team
from simulator.http.keys import CATALOG, NAMESPACE, SETTINGS, WORLDS
from simulator.http.middlewares import auth
from simulator.http.peers import PEER_HEADER, merged, siblings_namespaces
from simulator.http.requests import read_json
from simulator.http.responses import json_response
from simulator.team.lifetimes import expiry_of, extended
from simulator.worlds import Namespace, Worlds, not_found


@auth("team")
async def create_namespace(request: web.Request) -> web.Response:
    name = check_name(request.match_info["name"])
    body = await read_json(request, optional=True)
    idle = body.get("idleSeconds")
    if isinstance(idle, float) and idle.is_integer():
        idle = int(idle)  # 3600.0 is the JSON integer 3600 (JSON Schema counts it as one)
    if idle is not None and (not isinstance(idle, int) or isinstance(idle, bool) or idle < 1):
        raise ApiError(
            "invalid_request",
            "`idleSeconds` is a whole number of seconds, at least 1.",
            param="idleSeconds",
        )
    worlds = request.app[WORLDS]
    expires = expiry_of(body, worlds.now())
    if worlds.team is not None:
        return await team.create_namespace(request, idle, expires)
    caller = request.app[NAMESPACE]
    if caller not in (DEFAULT, name) and worlds.find(name) is not None:
        raise not_yours(caller)  # before anything: an existing namespace is GET's business
    namespace, created = await worlds.create(name, idle, expires_at=expires)
    if not created and caller not in (DEFAULT, name):
        raise not_yours(caller)  # made by someone else between the look and the creation
    return json_response(worlds.describe(namespace, keys=True), status=201 if created else 200)


@auth("team")
async def list_namespaces(request: web.Request) -> web.Response:
    worlds = request.app[WORLDS]
    if worlds.team is not None:
        return await team.list_namespaces(request)
    await worlds.sweep()  # an expired namespace is never listed, whatever the sweeper's pace
    caller = request.app[NAMESPACE]
    names = worlds.names() if caller == DEFAULT else [caller]
    data = [worlds.describe(n, keys=False) for n in map(worlds.find, names) if n is not None]
    peers = request.app[SETTINGS].peers
    if caller == DEFAULT and peers and PEER_HEADER not in request.headers:
        # One worker of several: the siblings hold the rest (simulator/http/peers.py).
        data = merged(data, await siblings_namespaces(peers, request.app[CATALOG]))
    return json_response({"data": data})


@auth("team")
async def get_namespace(request: web.Request) -> web.Response:
    worlds = request.app[WORLDS]
    if worlds.team is not None:
        return await team.get_namespace(request)
    namespace = _visible(request, worlds)
    return json_response(worlds.describe(namespace, keys=True))


@auth("team")
async def delete_namespace(request: web.Request) -> web.Response:
    worlds = request.app[WORLDS]
    if worlds.team is not None:
        return await team.delete_namespace(request)
    namespace = _visible(request, worlds)
    if namespace.name == DEFAULT:
        raise ApiError(
            "forbidden",
            "The namespace `default` cannot be deleted; `payorch reset` empties it.",
            param="name",
        )
    if not await worlds.delete(namespace.name):
        raise not_found(namespace.name)
    return web.Response(status=204)


@auth("team")
async def extend_namespace(request: web.Request) -> web.Response:
    """`POST /_sim/namespaces/{name}/extend` `{seconds}` or `{expiresAt}`: a later expiry."""
    worlds = request.app[WORLDS]
    body = await read_json(request)
    if worlds.team is not None:
        return await team.extend_namespace(request, body)
    namespace = _visible(request, worlds)
    if namespace.name == DEFAULT:
        raise ApiError("forbidden", "The namespace `default` has no expiry.", param="name")
    extended_at = extended(body, namespace.expires_at, worlds.now())
    return json_response(worlds.describe(await worlds.extend(namespace, extended_at), keys=True))


def _visible(request: web.Request, worlds: Worlds) -> Namespace:
    """The namespace the path names, if the caller may see it: `default`'s credentials see every
    one, another namespace's only itself (any other answers 403, existing or not)."""
    name = check_name(request.match_info["name"])
    caller = request.app[NAMESPACE]
    if caller not in (DEFAULT, name):
        raise not_yours(caller)
    namespace = worlds.find(name)
    if namespace is None:
        raise not_found(name)
    return namespace


def not_yours(caller: str) -> ApiError:
    """403 for a credential of `caller` showing or deleting another namespace."""
    return ApiError(
        "forbidden",
        f"A credential of namespace {caller!r} manages only {caller!r}; use `default`'s.",
        param="name",
    )
