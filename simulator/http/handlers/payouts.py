"""Pay-out routes: /me/payout/{methods,currencies,balance,fund-sandbox,transfer,swap,send}.

Payouts are the merchant's (per environment), so merchant-wide credentials may use them too.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from simulator.domain.payouts.service import PAYOUT_STATUSES, PayoutSend
from simulator.http.idempotency import REPLAYED_HEADER, KeyHold, Stored, idempotency_key
from simulator.http.keys import IDEMPOTENCY, PAYOUTS, STORE
from simulator.http.middlewares import auth, principal_of
from simulator.http.requests import base_url, page_params, query_choice, read_json
from simulator.http.responses import json_response, offset_page
from simulator.jsonio import dumps


@auth("secret")
async def list_methods(request: web.Request) -> web.Response:
    items = request.app[PAYOUTS].account.method_entries(principal_of(request), base_url(request))
    return json_response({"items": items})


@auth("secret")
async def list_currencies(request: web.Request) -> web.Response:
    currencies = request.app[PAYOUTS].account.currency_entries(principal_of(request))
    return json_response({"currencies": currencies})


@auth("secret")
async def get_balance(request: web.Request) -> web.Response:
    return json_response(request.app[PAYOUTS].account.balance_view(principal_of(request)))


# Sandbox only, but production answers the spec's own 400 fund_sandbox_only (not the generic
# production_key_refused), so the environment is checked by the service, not by @auth("sandbox").
@auth("secret")
async def fund_sandbox(request: web.Request) -> web.Response:
    body = await read_json(request)
    with request.app[STORE].batch():
        funded = request.app[PAYOUTS].account.fund_sandbox(principal_of(request), body)
    return json_response(funded)


@auth("secret")
async def transfer(request: web.Request) -> web.Response:
    body = await read_json(request)
    with request.app[STORE].batch():
        moved = request.app[PAYOUTS].account.transfer(principal_of(request), body)
    return json_response(moved)


@auth("secret")
async def quote_swap(request: web.Request) -> web.Response:
    query = request.query
    quote = request.app[PAYOUTS].account.quote(
        principal_of(request),
        query.get("from"),
        query.get("to"),
        query.get("amount"),
        from_query=True,
    )
    return json_response(quote.as_json())


@auth("secret")
async def swap(request: web.Request) -> web.Response:
    body = await read_json(request)
    with request.app[STORE].batch():
        swapped = request.app[PAYOUTS].account.swap(principal_of(request), body)
    return json_response(swapped)


@auth("secret")
async def send_payout(request: web.Request) -> web.Response:
    principal = principal_of(request)
    body = await read_json(request)
    payouts, store = request.app[PAYOUTS], request.app[STORE]

    # Two commits around the provider call, each with the Idempotency-Key's part: the debit with
    # the key's reservation, the provider's answer with its response (or its release on a
    # rejection: errors, payout_dispatch_failed too, are never kept, so a corrected retry under the
    # same key executes afresh). Killed in between, a retry finishes the reserved payout.
    async def execute(hold: KeyHold) -> Stored:
        with store.batch():
            send = payouts.open_send(principal, body)
            hold.reserve({"payoutId": send.payout_id})
        return await finish(hold, send)

    async def resume(hold: KeyHold, ref: dict[str, Any]) -> Stored:
        return await finish(hold, payouts.resume_send(principal, body, ref["payoutId"]))

    async def finish(hold: KeyHold, send: PayoutSend) -> Stored:
        dispatch = await payouts.dispatch(send)
        with store.batch():
            payout = payouts.record_dispatch(send, dispatch)
            if not dispatch.accepted:
                hold.release()
            else:
                icon = f"{base_url(request)}/static/icons/{send.method.icon}"
                view = {"payout": payouts.view(payout), "methodName": send.method.name}
                payload = dumps({**view, "logoUrl": icon, "iconUrl": icon})
                hold.complete(200, payload)
        if not dispatch.accepted:
            raise payouts.rejected(payout, dispatch)
        return 200, payload

    status, payload, replayed = await request.app[IDEMPOTENCY].run(
        principal.scope,
        idempotency_key(request.headers),
        "/me/payout/send",
        body,
        execute,
        resume,
    )
    headers = {REPLAYED_HEADER: "true"} if replayed else None
    return web.Response(
        body=payload, status=status, content_type="application/json", headers=headers
    )


@auth("secret")
async def list_payouts(request: web.Request) -> web.Response:
    limit, offset = page_params(request)
    payouts = request.app[PAYOUTS]
    page, total = payouts.list(
        principal_of(request),
        status=query_choice(request, "status", PAYOUT_STATUSES),
        method_id=request.query.get("methodId") or None,
        limit=limit,
        offset=offset,
    )
    return json_response(
        offset_page([payouts.view(payout) for payout in page], total, limit, offset)
    )


@auth("secret")
async def get_payout(request: web.Request) -> web.Response:
    payouts = request.app[PAYOUTS]
    payout = payouts.get(principal_of(request), request.match_info["id"])
    return json_response({"payout": payouts.view(payout)})


# Like fund-sandbox: production answers 400 simulate_sandbox_only from the service.
@auth("secret")
async def simulate_payout(request: web.Request) -> web.Response:
    body = await read_json(request)
    payouts = request.app[PAYOUTS]
    with request.app[STORE].batch():
        payout = payouts.simulate(
            principal_of(request), request.match_info["id"], body.get("action")
        )
    return json_response({"payout": payouts.view(payout)})
