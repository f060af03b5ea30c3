"""The control plane's cascade trace of one payment or payout (design.md 1.5).

Unlike the rest of the control plane, production keys may read it (production is where the
cascade runs): any secret key of the merchant that owns the payment or payout, in either
environment. Another merchant's id is the API's own not-found."""

from __future__ import annotations

from aiohttp import web

from simulator.domain.errors import ApiError
from simulator.domain.trace import trace_view
from simulator.http.keys import CONTEXT, PAYMENTS, PAYOUTS
from simulator.http.middlewares import auth, principal_of
from simulator.http.responses import json_response


@auth("secret")
async def payment_trace(request: web.Request) -> web.Response:
    payments = request.app[PAYMENTS]
    tx_id = request.match_info["id"]
    tx = payments.ctx.transactions.get(tx_id)
    if tx is None or tx["merchantId"] != principal_of(request).merchant.id:
        raise ApiError("transaction_not_found", f"No transaction {tx_id}.", param="id")
    return json_response(payments.trace_view(tx))


@auth("secret")
async def payout_trace(request: web.Request) -> web.Response:
    payout_id = request.match_info["id"]
    payout = request.app[PAYOUTS].find(payout_id)
    if payout is None or payout["merchantId"] != principal_of(request).merchant.id:
        raise ApiError("payout_not_found", f"No payout {payout_id}.", param="id")
    return json_response(trace_view(payout, request.app[CONTEXT].trace.find(payout_id)))
