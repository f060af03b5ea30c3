"""The control plane's simulated providers (design.md 1.5): list, read, script, incidents (start
and end), reset.

Any sandbox secret key may call them (the simulator operator's role); what they change applies to
the production flows of every merchant (the sandbox cascade always accepts)."""

from __future__ import annotations

from aiohttp import web

from simulator.http.keys import CONTEXT, STORE
from simulator.http.middlewares import auth
from simulator.http.requests import read_json
from simulator.http.responses import json_response


@auth("sandbox")
async def list_providers(request: web.Request) -> web.Response:
    return json_response({"data": request.app[CONTEXT].providers.views()})


@auth("sandbox")
async def get_provider(request: web.Request) -> web.Response:
    return json_response(request.app[CONTEXT].providers.view(request.match_info["id"]))


@auth("sandbox")
async def update_provider(request: web.Request) -> web.Response:
    body = await read_json(request)
    world = request.app[CONTEXT].providers
    with request.app[STORE].batch():
        view = world.patch(request.match_info["id"], body)
        world.flush()
    return json_response(view)


@auth("sandbox")
async def create_incident(request: web.Request) -> web.Response:
    body = await read_json(request)
    world = request.app[CONTEXT].providers
    with request.app[STORE].batch():
        incident = world.schedule_incident(request.match_info["id"], body)
        world.flush()
    return json_response(incident, status=201)


@auth("sandbox")
async def reset_providers(request: web.Request) -> web.Response:
    world = request.app[CONTEXT].providers
    with request.app[STORE].batch():
        world.reset()
    return json_response({"data": world.views()})


@auth("sandbox")
async def end_incident(request: web.Request) -> web.Response:
    world = request.app[CONTEXT].providers
    with request.app[STORE].batch():
        ended = world.end_incident(request.match_info["id"], request.match_info["incidentId"])
        world.flush()
    return json_response(ended)


@auth("sandbox")
async def end_incidents(request: web.Request) -> web.Response:
    world = request.app[CONTEXT].providers
    with request.app[STORE].batch():
        ended = world.end_incidents(request.match_info["id"])
        world.flush()
    return json_response({"data": ended})
