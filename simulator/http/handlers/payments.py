"""Pay-in routes: create (with Idempotency-Key), list, get, refund, simulate; claims."""

from __future__ import annotations

from functools import partial

from aiohttp import web

from simulator.domain.countries import normalize_country
from simulator.domain.payins.request import PaymentRequest
from simulator.domain.states import TRANSACTION_STATUSES
from simulator.domain.transactions import TransactionFilters
from simulator.domain.views import claim_view, refund_view
from simulator.http import payment_creation
from simulator.http.idempotency import NO_KEY, REPLAYED_HEADER, idempotency_key
from simulator.http.keys import IDEMPOTENCY, PAYMENTS, REFUNDS, RENDERED, STORE
from simulator.http.middlewares import auth, principal_of
from simulator.http.requests import base_url, checked_body, page_params, query_choice, read_json
from simulator.http.responses import Answer, json_response, offset_page_bytes


@auth("secret")
async def create_payment(request: web.Request) -> web.Response:
    principal = principal_of(request)
    payment = checked_body(request, PaymentRequest)  # the validation's typed result
    headers = request.headers
    simulate = headers.get("Sandbox-Simulate")
    key = idempotency_key(headers)
    app = request.app
    if key is None:  # nothing to replay or to keep: the operation, as the cache would run it
        _, payload = await payment_creation.create_payment(
            app, principal, payment, simulate, request.remote, base_url(request), NO_KEY
        )
        return Answer(body=payload, content_type="application/json")
    # Keys are per shop too: a replay must never hand one shop another shop's transaction,
    # which it could not even read back (GET and list only show the caller's shop).
    scope = (*principal.scope, principal.shop.id if principal.shop else "")
    # The Sandbox-Simulate header changes what the request does: part of its identity.
    operation = f"POST /payments Sandbox-Simulate={simulate or ''}"
    execute = partial(
        payment_creation.create_payment,
        app,
        principal,
        payment,
        simulate,
        request.remote,
        base_url(request),
    )
    status, payload, replayed = await app[IDEMPOTENCY].run(
        scope, key, operation, payment.body or {}, execute
    )
    return Answer(
        body=payload,
        status=status,
        content_type="application/json",
        headers={REPLAYED_HEADER: "true"} if replayed else None,
    )


@auth("secret")
async def list_payments(request: web.Request) -> web.Response:
    principal = principal_of(request)
    limit, offset = page_params(request)
    country = request.query.get("country")
    filters = TransactionFilters(
        shop_id=principal.shop.id if principal.shop else None,
        status=query_choice(request, "status", TRANSACTION_STATUSES),
        payment_method_id=request.query.get("paymentMethodId") or None,
        country=normalize_country(country) if country else None,
        merchant_order_id=request.query.get("merchantOrderId") or None,
        method=request.query.get("method") or None,
    )
    ids, total = request.app[PAYMENTS].list_ids(principal, filters, limit, offset)
    rows = request.app[RENDERED].many(ids, base_url(request))
    return web.Response(
        body=offset_page_bytes(rows, total, limit, offset), content_type="application/json"
    )


@auth("secret")
async def get_payment(request: web.Request) -> web.Response:
    body = request.app[RENDERED].one(
        principal_of(request), request.match_info["id"], base_url(request)
    )
    return web.Response(body=body, content_type="application/json")


@auth("secret")
async def refund_payment(request: web.Request) -> web.Response:
    body = await read_json(request, optional=True)
    with request.app[STORE].batch():
        claim = request.app[REFUNDS].refund(principal_of(request), request.match_info["id"], body)
    return json_response(refund_view(claim))


@auth("sandbox")
async def simulate_payment(request: web.Request) -> web.Response:
    body = await read_json(request)
    with request.app[STORE].batch():
        outcome = request.app[PAYMENTS].simulate(
            principal_of(request), request.match_info["id"], body.get("action")
        )
    return json_response(
        {
            "id": outcome.transaction["id"],
            "status": outcome.transaction["status"],
            "eventsFired": list(outcome.events),
        }
    )


@auth("secret")
async def get_claim(request: web.Request) -> web.Response:
    claim = request.app[REFUNDS].get_claim(principal_of(request), request.match_info["id"])
    return json_response(claim_view(claim))
