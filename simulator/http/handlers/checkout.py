"""Hosted checkout: the session API (create, read, select). The buyer-facing pages are in
`simulator/http/pages/checkout.py`."""

from __future__ import annotations

from aiohttp import web

from simulator.domain.checkout.request import SELECT_HELP, parse_select_request
from simulator.domain.checkout.service import select_view
from simulator.http.keys import CHECKOUT, STORE
from simulator.http.middlewares import auth, owned_by, principal_of
from simulator.http.owners import session_owner
from simulator.http.requests import base_url, client_ip, read_json
from simulator.http.responses import json_response


@auth("secret")
async def create_session(request: web.Request) -> web.Response:
    body = await read_json(request)
    with request.app[STORE].batch():
        view = request.app[CHECKOUT].create(principal_of(request), body, base_url(request))
    return json_response(view)


# `token` auth: the session token in the path is the credential (spec, Endpoints table).
@owned_by(session_owner)
async def get_session(request: web.Request) -> web.Response:
    return json_response(request.app[CHECKOUT].read(request.match_info["token"], base_url(request)))


@owned_by(session_owner)
async def select_method(request: web.Request) -> web.Response:
    token, origin = request.match_info["token"], base_url(request)
    select = parse_select_request(await read_json(request), origin + SELECT_HELP)
    with request.app[STORE].batch():
        tx = request.app[CHECKOUT].select(token, select, client_ip(request), origin)
    return json_response(select_view(token, tx, origin))
