"""Hosted checkout: the session API (create, read, select) and the buyer-facing pages' routes."""

from __future__ import annotations

from aiohttp import web

from simulator.domain.checkout import EXPIRE_JOB, CheckoutService, buyer_ip, select_view
from simulator.domain.checkout_request import SELECT_HELP, parse_select_request
from simulator.http.keys import CONTEXT, PAYMENTS, SCHEDULER, STORE
from simulator.http.middlewares import auth, principal_of
from simulator.http.requests import base_url, read_json
from simulator.http.responses import json_response
from simulator.http.routes import API

CHECKOUT = web.AppKey("checkout", CheckoutService)


def client_ip(request: web.Request) -> str | None:
    """The buyer's address as our edge reports it (see `buyer_ip` for the header order)."""
    return buyer_ip(
        request.headers.get("X-Forwarded-For"), request.headers.get("X-Real-IP"), request.remote
    )


def setup(app: web.Application) -> None:
    """Create this resource's services on `app` and register its routes."""
    service = CheckoutService(app[CONTEXT], app[PAYMENTS], app[STORE].table("checkout_sessions"))
    app[CHECKOUT] = service
    app[SCHEDULER].register(EXPIRE_JOB, lambda payload: service.expire(payload["token"]))
    # Imported here, not at the top: the pages read CHECKOUT from this module.
    from simulator.http.pages import checkout as pages

    r = app.router
    r.add_post(f"{API}/checkout/sessions", create_session)
    r.add_get(f"{API}/checkout/sessions/{{token}}", get_session)
    r.add_post(f"{API}/checkout/sessions/{{token}}/select", select_method)
    r.add_get("/checkout/{token}", pages.picker_page)
    r.add_post("/checkout/{token}/select", pages.select_page)
    r.add_get("/c/{transaction_id}", pages.transaction_page)


@auth("secret")
async def create_session(request: web.Request) -> web.Response:
    body = await read_json(request)
    with request.app[STORE].batch():
        view = request.app[CHECKOUT].create(principal_of(request), body, base_url(request))
    return json_response(view)


# `token` auth: the session token in the path is the credential (spec, Endpoints table).
async def get_session(request: web.Request) -> web.Response:
    return json_response(request.app[CHECKOUT].read(request.match_info["token"], base_url(request)))


async def select_method(request: web.Request) -> web.Response:
    token, origin = request.match_info["token"], base_url(request)
    select = parse_select_request(await read_json(request), origin + SELECT_HELP)
    with request.app[STORE].batch():
        tx = request.app[CHECKOUT].select(token, select, client_ip(request), origin)
    return json_response(select_view(token, tx, origin))
