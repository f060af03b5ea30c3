"""GET /ping, /me, /me/balance, /payment-methods."""

from __future__ import annotations

from aiohttp import web

from simulator.clock import isoformat
from simulator.domain.account import balance_view, identity
from simulator.domain.auth import resolve_shop
from simulator.domain.countries import normalize_country
from simulator.domain.methods import CHANNELS, MethodFilters, list_methods
from simulator.events.bus import API_VERSION
from simulator.http.keys import CATALOG, CLOCK, CONTEXT
from simulator.http.middlewares import auth, principal_of
from simulator.http.requests import base_url, query_choice
from simulator.http.responses import json_response


@auth("any")
async def ping(request: web.Request) -> web.Response:
    principal = principal_of(request)
    return json_response(
        {
            "ok": True,
            "environment": principal.environment,
            "keyKind": principal.key_kind,
            "keyId": principal.key_id,
            "apiVersion": API_VERSION,
            "merchant": {"id": principal.merchant.id, "name": principal.merchant.name},
            "timestamp": isoformat(request.app[CLOCK].timestamp()),
        }
    )


@auth("secret")
async def me(request: web.Request) -> web.Response:
    return json_response(identity(principal_of(request), request.app[CATALOG]))


@auth("secret")
async def balance(request: web.Request) -> web.Response:
    ctx = request.app[CONTEXT]
    return json_response(balance_view(principal_of(request), ctx.ledger, ctx.now()))


@auth("any")
async def payment_methods(request: web.Request) -> web.Response:
    principal = principal_of(request)
    catalog = request.app[CATALOG]
    shop = resolve_shop(principal, catalog, request.query.get("shopId"))
    country = request.query.get("country")
    filters = MethodFilters(
        country=normalize_country(country) if country else None,
        channel=query_choice(request, "channel", CHANNELS),
        method=request.query.get("method") or None,
    )
    return json_response(
        list_methods(catalog, shop, principal.environment, filters, base_url(request))
    )
