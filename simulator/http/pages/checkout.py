"""Hosted checkout pages: the method picker (`/checkout/<token>`), the per-payment page
(`/c/<transaction_id>`: a 307 to the provider's page for hosted rails, instructions otherwise) and
that page's status (`/c/<transaction_id>/status`, JSON, polled by the page's script).

Handlers parse, call one checkout-service function and render, in the buyer's language
(`html.locale_for`); the HTML lives in `simulator/templates/checkout/`, the instructions of each
rail are built by `instructions.py`. Element ids are stable for integrators' browser tests (the
README's "Hosted checkout pages" lists them).
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

from aiohttp import web

from simulator.domain.checkout.request import (
    SELECT_CUSTOMER_RULES,
    SELECT_HELP,
    parse_select_request,
)
from simulator.domain.checkout.service import MethodOption, Picker, full_name
from simulator.domain.errors import ApiError
from simulator.domain.views import icon_path
from simulator.http.keys import CHECKOUT, CONTEXT, STORE
from simulator.http.middlewares import owned_by
from simulator.http.owners import payment_owner, session_owner
from simulator.http.pages.html import (
    Markup,
    error_page,
    html_errors,
    join,
    keep_lang,
    link,
    locale_for,
    page,
    render,
)
from simulator.http.pages.instructions import (
    Decimals,
    closed_text,
    instructions_html,
    moment,
    status_text,
    test_badge,
)
from simulator.http.requests import base_url, client_ip, read_form
from simulator.http.responses import json_response
from simulator.i18n import N_, PageLocale

if TYPE_CHECKING:
    from simulator.domain.catalog import PaymentMethod

# Buyer fields a rail may ask for (keys of missing_required_fields) -> the select form's field.
FORM_FIELDS = {"documentId": "documentId", "email": "email", "userName": "fullName"}


# -- /checkout/<token> -----------------------------------------------------------------------


@owned_by(session_owner)
@html_errors
async def picker_page(request: web.Request) -> web.StreamResponse:
    picker = request.app[CHECKOUT].open_page(request.match_info["token"], client_ip(request))
    loc = locale_for(request, picker.session["country"])
    if picker.session["completedTxId"]:
        # A completed session is locked to its transaction: revisits go to the payment page.
        link = request.app[CHECKOUT].buyer_link(picker.session["completedTxId"])
        raise web.HTTPSeeOther(keep_lang(link, loc))
    fx = request.app[CONTEXT].fx
    return page(
        request,
        loc,
        loc.gettext(N_("Choose how to pay")),
        _picker_html(loc, picker, fx.decimals),
        environment=picker.session["environment"],
    )


def _headline(picker: Picker) -> tuple[Decimal, str] | None:
    """What the buyer pays, when every method charges the same local amount (one country's
    grid): shown first, rather than the merchant's price in another currency."""
    amounts = {(o.amount_local, o.currency_local) for o in picker.options if not o.unavailable}
    return amounts.pop() if len(amounts) == 1 else None


def _picker_html(loc: PageLocale, picker: Picker, decimals: Decimals) -> Markup:
    session = picker.session
    token = session["id"]
    tiles = [_method_html(loc, token, option, decimals) for option in picker.options]
    price = Decimal(session["amount"]), session["currency"]
    amount, currency = _headline(picker) or price
    presentment = Markup("")
    if currency != price[1]:
        text = loc.money_text(*price, decimals(price[1]))
        presentment = render("checkout/presentment.html", loc, amount=text)
    shown, code = loc.money(amount, currency, decimals(currency))
    order_id = session.get("merchantOrderId")
    return render(
        "checkout/picker.html",
        loc,
        shop=picker.shop_name,
        amount=shown,
        amount_value=f"{amount:.{decimals(currency)}f}",
        currency=currency,
        currency_code=code,
        presentment=presentment,
        name=render("checkout/customer_name.html", loc, name=full_name(session["customer"])),
        customer_email=session["customer"]["email"],
        order=render("checkout/order.html", loc, order_id=order_id) if order_id else Markup(""),
        methods=join(tiles) if tiles else render("checkout/empty.html", loc),
        expires=render("checkout/expires.html", loc, **moment(loc, session["expiresAt"])),
        cancel=link(
            loc, "cancel", session["returnUrl"], loc.gettext(N_("Cancel and return to the shop"))
        ),
    )


def _method_html(loc: PageLocale, token: str, option: MethodOption, decimals: Decimals) -> Markup:
    method = option.method
    if option.unavailable:
        # The domain's reason is for integrators (English, with limits in USD); the buyer gets it
        # in their words.
        reason = loc.gettext(N_("Not available for this amount."))
        note = render("checkout/unavailable.html", loc, id=method.id, reason=reason)
    elif option.needs:
        labels = ", ".join(field.label for field in option.needs)
        note = render("checkout/needs_hint.html", loc, id=method.id, labels=labels)
    else:
        note = Markup("")
    places = decimals(option.currency_local)
    amount, currency = loc.money(option.amount_local, option.currency_local, places)
    return render(
        "checkout/method.html",
        loc,
        state_class=" unavailable" if option.unavailable else "",
        id=method.id,
        action=keep_lang(f"/checkout/{token}/select", loc),
        disabled="disabled" if option.unavailable else "",
        aria_label=loc.gettext(N_("Pay with $method"), method=loc.data(method.name)),
        name=loc.data(method.name),
        badge=test_badge(loc, method),
        label=loc.data(method.method_label),
        icon=icon_path(method),
        amount=amount,
        amount_value=f"{option.amount_local:.{places}f}",
        currency=currency,
        currency_suffix=render("checkout/currency_suffix.html", loc, currency=currency),
        extra=note,
    )


@owned_by(session_owner)
@html_errors
async def select_page(request: web.Request) -> web.StreamResponse:
    """The picker's form post: select the method, then show the payment page (303).

    When the rail needs buyer data the merchant did not send (or sent malformed), the buyer gets
    a short form for exactly those fields, which posts back here.
    """
    token = request.match_info["token"]
    form = await read_form(request)
    typed = {name: v for name in FORM_FIELDS.values() if isinstance(v := form.get(name), str)}
    posted = form.get("paymentMethodId")
    method_id = posted if isinstance(posted, str) else None
    origin = base_url(request)
    # The session as stored, for the page's language and footer only (select checks it).
    session = request.app[CHECKOUT].sessions.get(token)
    loc = locale_for(request, session["country"] if session else None)
    environment = session["environment"] if session else None
    try:
        select = parse_select_request(_select_body(method_id, typed), origin + SELECT_HELP)
        with request.app[STORE].batch():
            tx = request.app[CHECKOUT].select(token, select, client_ip(request), origin)
    except ApiError as error:
        if error.code == "checkout_session_already_completed":
            existing = (error.details or {})["existingTxId"]
            link = request.app[CHECKOUT].buyer_link(existing)
            raise web.HTTPSeeOther(keep_lang(link, loc)) from None
        if error.code == "checkout_session_not_found":
            raise
        if _collectable(error) and method_id is not None:
            return _details_page(request, loc, environment, token, method_id, error, typed)
        back = keep_lang(f"/checkout/{token}", loc)
        return error_page(request, error, loc=loc, back_href=back, environment=environment)
    # The buyer proved the session's token: the link that leads on to the provider's page.
    raise web.HTTPSeeOther(keep_lang(request.app[CHECKOUT].buyer_link(tx["id"]), loc))


def _select_body(method_id: str | None, typed: dict[str, str]) -> dict[str, Any]:
    """The form post as the select API's body (blank inputs are left out)."""
    body: dict[str, Any] = {"paymentMethodId": method_id}
    customer = {name: value for name, value in typed.items() if value.strip()}
    if customer:
        body["customer"] = customer
    return body


def _collectable(error: ApiError) -> list[dict[str, str]]:
    """The fields of a missing_required_fields error, when the page can ask for all of them."""
    if error.code != "missing_required_fields":
        return []
    details = error.details or {}
    fields = [*details.get("missingFields", []), *details.get("malformedFields", [])]
    return fields if all(f.get("key") in FORM_FIELDS for f in fields) else []


def _details_page(
    request: web.Request,
    loc: PageLocale,
    environment: str | None,
    token: str,
    method_id: str,
    error: ApiError,
    typed: dict[str, str],
) -> web.Response:
    method: PaymentMethod = request.app[CONTEXT].catalog.methods[method_id]
    fields = _collectable(error)
    inputs = join(
        render(
            "checkout/need.html",
            loc,
            name=(name := FORM_FIELDS[field["key"]]),
            type="email" if name == "email" else "text",
            value=typed.get(name, ""),
            max_len=SELECT_CUSTOMER_RULES[name],
            label=loc.data(field.get("label", name)),
            help=loc.data(field.get("help", "")),
        )
        for field in fields
    )
    message = (
        loc.gettext(N_("Please check the details below: a value is not valid."))
        if (error.details or {}).get("malformedFields")
        else loc.gettext(
            N_("To pay with $method, please add the details below."), method=loc.data(method.name)
        )
    )
    content = render(
        "checkout/details.html",
        loc,
        method_name=loc.data(method.name),
        message=message,
        action=keep_lang(f"/checkout/{token}/select", loc),
        method_id=method_id,
        inputs=inputs,
        back=keep_lang(f"/checkout/{token}", loc),
    )
    # 422 like the API: the select did not happen; the page is the way to complete it.
    return page(
        request,
        loc,
        loc.gettext(N_("A few more details")),
        content,
        status=422,
        environment=environment,
        switch_path=f"/checkout/{token}",
    )


# -- /c/<transaction_id> ---------------------------------------------------------------------


@owned_by(payment_owner)
@html_errors
async def transaction_page(request: web.Request) -> web.StreamResponse:
    tx, tokened = request.app[CHECKOUT].transaction(request.match_info["transaction_id"])
    loc = locale_for(request, tx["country"])
    form_path = tx.get("paymentFormPath")
    if form_path and (tokened or tx.get("providerToken") is None):
        # Hosted rail: the provider's own page takes over (spec: 307, server-side). A production
        # payment's page approves it: only the tokened link its answer gave leads there.
        raise web.HTTPTemporaryRedirect(base_url(request) + keep_lang(form_path, loc))
    ctx = request.app[CONTEXT]
    # A production hosted rail by its bare id: its status only (docs/decisions.md).
    return page(
        request,
        loc,
        loc.data(tx["paymentMethodName"]),
        instructions_html(loc, tx, ctx.catalog, ctx.fx.decimals, status_only=bool(form_path)),
        environment=tx["environment"],
        refresh=tx["status"] == "pending",
    )


@owned_by(payment_owner)
async def transaction_status(request: web.Request) -> web.Response:
    """The payment's status for its page's script: public like the page (it tells only what the
    page shows), in the page's language (`?lang=`), never cached."""
    tx, _ = request.app[CHECKOUT].transaction(request.match_info["transaction_id"])
    loc = locale_for(request, tx["country"])
    status = tx["status"]
    body = {
        "transactionId": tx["id"],
        "status": status,
        "statusText": status_text(loc, status),
        "message": closed_text(loc, status) if status != "pending" else None,
    }
    return json_response(body, headers={"Cache-Control": "no-store", "Content-Language": loc.tag})
