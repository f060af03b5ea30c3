"""The simulated upstream provider's hosted page (card forms, bank redirects).

Approve / decline / abandon drive the same transitions and events as the simulate endpoint, then
send the buyer back to the transaction's `returnUrl` (or show the result when there is none).
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

from aiohttp import web

from simulator.domain.errors import ApiError
from simulator.domain.provider_links import hosted_payment
from simulator.http.keys import CONTEXT, PAYMENTS, STORE
from simulator.http.pages.html import html_errors, link, page, render, safe_href

if TYPE_CHECKING:
    from simulator.domain.records import TransactionRecord

ACTIONS = {"approve": "paid", "decline": "failed", "abandon": "expired"}


def _hosted_tx(request: web.Request) -> TransactionRecord:
    tx = hosted_payment(request.app[PAYMENTS].ctx.transactions, request.match_info["id"])
    if tx is None:
        raise ApiError("transaction_not_found", "No payment to take on this provider page.")
    return tx


def _own_path(tx: TransactionRecord) -> str:
    """The page's own link (with its token in production), for its buttons and the way back."""
    return tx["paymentFormPath"] or ""


@html_errors
async def provider_page(request: web.Request) -> web.StreamResponse:
    tx = _hosted_tx(request)
    if tx["status"] == "pending":
        body = render("provider/actions.html", base=_own_path(tx))
    else:
        body = render(
            "provider/done.html",
            return_link=link("return", tx.get("returnUrl"), "Return to the shop"),
        )
    decimals = request.app[CONTEXT].fx.decimals(tx["currencyLocal"])
    content = render(
        "provider/page.html",
        provider=tx["paymentMethodName"],
        tx_id=tx["id"],
        method=tx["paymentMethod"],
        icon=tx["iconPath"],
        amount=f"{Decimal(tx['amountLocal']):,.{decimals}f}",
        currency=tx["currencyLocal"],
        status=tx["status"],
        body=body,
    )
    return page(tx["paymentMethodName"], content)


@html_errors
async def provider_action(request: web.Request) -> web.StreamResponse:
    tx = _hosted_tx(request)
    action = ACTIONS.get(request.match_info["action"])
    if action is None:
        raise ApiError("route_not_found", f"No provider action {request.match_info['action']}.")
    # Acting twice (a double click, the back button) changes nothing: the first act stands.
    if tx["status"] == "pending":
        with request.app[STORE].batch():
            request.app[PAYMENTS].apply(
                tx,  # type: ignore[arg-type]  # PaymentService takes a dict until it is typed
                action,
                simulator=tx["environment"] == "sandbox",
            )
    target = safe_href(tx.get("returnUrl")) or _own_path(tx)
    raise web.HTTPSeeOther(target)
