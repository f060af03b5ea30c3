"""The simulated upstream provider's hosted page (card forms, bank redirects).

Approve / decline / abandon drive the same transitions and events as the simulate endpoint, then
send the buyer back to the transaction's `returnUrl` (or show the result when there is none).
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

from aiohttp import web

from simulator.domain.errors import ApiError
from simulator.domain.providers.links import hosted_payment
from simulator.http.keys import CONTEXT, PAYMENTS, STORE
from simulator.http.middlewares import owned_by
from simulator.http.owners import payment_owner
from simulator.http.pages.html import (
    Markup,
    html_errors,
    keep_lang,
    link,
    locale_for,
    page,
    render,
    safe_href,
)
from simulator.http.pages.instructions import status_text, test_badge
from simulator.i18n import N_

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


@owned_by(payment_owner)
@html_errors
async def provider_page(request: web.Request) -> web.StreamResponse:
    tx = _hosted_tx(request)
    loc = locale_for(request, tx["country"])
    if tx["status"] == "pending":
        query = keep_lang("", loc)
        body = render("provider/actions.html", loc, base=_own_path(tx), query=query)
    else:
        back = loc.gettext(N_("Return to the shop"))
        body = render(
            "provider/done.html", loc, return_link=link(loc, "return", tx.get("returnUrl"), back)
        )
    catalog = request.app[CONTEXT].catalog
    decimals = request.app[CONTEXT].fx.decimals(tx["currencyLocal"])
    local = Decimal(tx["amountLocal"])
    amount, currency = loc.money(local, tx["currencyLocal"], decimals)
    shop = catalog.shops.get(tx["shopId"])
    order_id = tx.get("merchantOrderId")
    content = render(
        "provider/page.html",
        loc,
        provider=loc.data(tx["paymentMethodName"]),
        badge=test_badge(loc, catalog.methods.get(tx["paymentMethodId"])),
        tx_id=tx["id"],
        method=tx["paymentMethod"],
        icon=tx["iconPath"],
        shop=shop.name if shop is not None else "",
        order=render("checkout/order.html", loc, order_id=order_id) if order_id else Markup(""),
        amount=amount,
        amount_value=f"{local:.{decimals}f}",
        currency=currency,
        currency_suffix=render("checkout/currency_suffix.html", loc, currency=currency),
        status=tx["status"],
        status_text=status_text(loc, tx["status"]),
        body=body,
    )
    name = loc.data(tx["paymentMethodName"])
    return page(request, loc, name, content, environment=tx["environment"])


@owned_by(payment_owner)
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
                tx, action, simulator=tx["environment"] == "sandbox", cause="provider_page"
            )
    loc = locale_for(request, tx["country"])
    target = safe_href(tx.get("returnUrl")) or keep_lang(_own_path(tx), loc)
    raise web.HTTPSeeOther(target)
