"""Hosted checkout pages: the method picker (`/checkout/<token>`) and the per-payment page
(`/c/<transaction_id>`: a 307 to the provider's page for hosted rails, instructions otherwise).

Handlers parse, call one checkout-service function and render; the HTML lives in
`simulator/templates/checkout/`. Element ids are stable for integrators' browser tests.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from aiohttp import web

from simulator.clock import isoformat, parse_iso
from simulator.domain.checkout import MethodOption, Picker, full_name
from simulator.domain.checkout_request import (
    SELECT_CUSTOMER_RULES,
    SELECT_HELP,
    parse_select_request,
)
from simulator.domain.errors import ApiError
from simulator.domain.rails import Layout, layout_of
from simulator.domain.views import icon_path
from simulator.http.keys import CHECKOUT, CONTEXT, STORE
from simulator.http.pages.codes import boleto_barcode_digits, itf_svg, qr_svg
from simulator.http.pages.html import Markup, error_page, html_errors, join, link, page, render
from simulator.http.requests import base_url, client_ip

if TYPE_CHECKING:
    from simulator.domain.records import TransactionRecord

STATUS_TEXT = {
    "pending": "Waiting for your payment",
    "completed": "Payment received",
    "failed": "Payment failed",
    "expired": "Payment expired",
    "refunded": "Payment refunded",
}
CLOSED_TEXT = {
    "completed": "Thank you: this payment has been received.",
    "refunded": "This payment was received and later refunded.",
}
# Buyer fields a rail may ask for (keys of missing_required_fields) -> the select form's field.
FORM_FIELDS = {"documentId": "documentId", "email": "email", "userName": "fullName"}


Decimals = Callable[[str], int]  # minor-unit digits of a currency (Fx.decimals)


def money(amount: Decimal, decimals: int) -> str:
    return f"{amount:,.{decimals}f}"


def when(moment: float | str) -> tuple[str, str]:
    """(machine ISO-8601, human UTC text) for a <time> element."""
    at = parse_iso(moment) if isinstance(moment, str) else datetime.fromtimestamp(moment, UTC)
    return isoformat(at), at.strftime("%d %b %Y, %H:%M UTC")


# -- /checkout/<token> -----------------------------------------------------------------------


@html_errors
async def picker_page(request: web.Request) -> web.StreamResponse:
    picker = request.app[CHECKOUT].open_page(request.match_info["token"], client_ip(request))
    if picker.session["completedTxId"]:
        # A completed session is locked to its transaction: revisits go to the payment page.
        raise web.HTTPSeeOther(f"/c/{picker.session['completedTxId']}")
    fx = request.app[CONTEXT].fx
    return page("Choose how to pay", _picker_html(picker, fx.decimals))


def _picker_html(picker: Picker, decimals: Decimals) -> Markup:
    session = picker.session
    token = session["id"]
    tiles = [_method_html(token, option, decimals) for option in picker.options]
    expires_iso, expires_text = when(session["expiresAt"])
    return render(
        "checkout/picker.html",
        shop=picker.shop_name,
        amount=money(Decimal(session["amount"]), decimals(session["currency"])),
        currency=session["currency"],
        customer_name=full_name(session["customer"]),
        customer_email=session["customer"]["email"],
        methods=join(tiles) if tiles else render("checkout/empty.html"),
        expires_iso=expires_iso,
        expires_text=expires_text,
        cancel=link("cancel", session["returnUrl"], "Cancel and return to the shop"),
    )


def _method_html(token: str, option: MethodOption, decimals: Decimals) -> Markup:
    method = option.method
    if option.unavailable:
        note = render("checkout/unavailable.html", id=method.id, reason=option.unavailable)
    elif option.needs:
        labels = ", ".join(field.label for field in option.needs)
        note = render("checkout/needs_hint.html", id=method.id, labels=labels)
    else:
        note = Markup("")
    return render(
        "checkout/method.html",
        state_class=" unavailable" if option.unavailable else "",
        id=method.id,
        action=f"/checkout/{token}/select",
        disabled="disabled" if option.unavailable else "",
        name=method.name,
        label=method.method_label,
        icon=icon_path(method),
        amount=money(option.amount_local, decimals(option.currency_local)),
        currency=option.currency_local,
        extra=note,
    )


@html_errors
async def select_page(request: web.Request) -> web.StreamResponse:
    """The picker's form post: select the method, then show the payment page (303).

    When the rail needs buyer data the merchant did not send (or sent malformed), the buyer gets
    a short form for exactly those fields, which posts back here.
    """
    token = request.match_info["token"]
    form = await request.post()
    typed = {name: v for name in FORM_FIELDS.values() if isinstance(v := form.get(name), str)}
    posted = form.get("paymentMethodId")
    method_id = posted if isinstance(posted, str) else None
    origin = base_url(request)
    try:
        select = parse_select_request(_select_body(method_id, typed), origin + SELECT_HELP)
        with request.app[STORE].batch():
            tx = request.app[CHECKOUT].select(token, select, client_ip(request), origin)
    except ApiError as error:
        if error.code == "checkout_session_already_completed":
            raise web.HTTPSeeOther(f"/c/{(error.details or {})['existingTxId']}") from None
        if error.code == "checkout_session_not_found":
            raise
        fields = _collectable(error)
        if fields and method_id is not None:
            return _details_page(request, token, method_id, error, fields, typed)
        return error_page(request, error, back_href=f"/checkout/{token}")
    raise web.HTTPSeeOther(f"/c/{tx['id']}")


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
    token: str,
    method_id: str,
    error: ApiError,
    fields: list[dict[str, str]],
    typed: dict[str, str],
) -> web.Response:
    method = request.app[CONTEXT].catalog.methods[method_id]
    inputs = join(
        render(
            "checkout/need.html",
            name=(name := FORM_FIELDS[field["key"]]),
            type="email" if name == "email" else "text",
            value=typed.get(name, ""),
            max_len=SELECT_CUSTOMER_RULES[name],
            label=field.get("label", name),
            help=field.get("help", ""),
        )
        for field in fields
    )
    content = render(
        "checkout/details.html",
        method_name=method.name,
        message=(
            "Please check the details below: a value is not valid."
            if (error.details or {}).get("malformedFields")
            else f"To pay with {method.name}, please add the details below."
        ),
        action=f"/checkout/{token}/select",
        method_id=method_id,
        inputs=inputs,
        back=f"/checkout/{token}",
    )
    # 422 like the API: the select did not happen; the page is the way to complete it.
    return page("A few more details", content, status=422)


# -- /c/<transaction_id> ---------------------------------------------------------------------


@html_errors
async def transaction_page(request: web.Request) -> web.StreamResponse:
    tx = request.app[CHECKOUT].transaction(request.match_info["transaction_id"])
    if form_path := tx.get("paymentFormPath"):
        # Hosted rail: the provider's own page takes over (spec: 307, server-side).
        raise web.HTTPTemporaryRedirect(base_url(request) + form_path)
    decimals = request.app[CONTEXT].fx.decimals
    return page(tx["paymentMethodName"], _instructions_html(tx, decimals))


def _instructions_html(tx: TransactionRecord, decimals: Decimals) -> Markup:
    status = tx["status"]
    if status == "pending":
        body = _payment_data_html(tx["paymentData"])
    else:
        body = render(
            "checkout/closed.html",
            message=CLOSED_TEXT.get(status, "This payment can no longer be paid."),
        )
    return render(
        "checkout/instructions.html",
        tx_id=tx["id"],
        status=status,
        status_text=STATUS_TEXT.get(status, status),
        icon=tx["iconPath"],
        method_name=tx["paymentMethodName"],
        amount=money(Decimal(tx["amountLocal"]), decimals(tx["currencyLocal"])),
        currency=tx["currencyLocal"],
        body=body,
        return_link=link("return", tx.get("returnUrl"), "Return to the shop"),
    )


def _payment_data_html(data: dict[str, str]) -> Markup:
    facts = [
        render("checkout/fact.html", term=term, fact_id=fact_id, value=data[key])
        for key, term, fact_id in (
            ("bankName", "Bank", "bank-name"),
            ("beneficiaryName", "Beneficiary", "beneficiary"),
        )
        if data.get(key)
    ]
    bank = join(facts)
    due = Markup("")
    if data.get("dueDate"):
        due_iso, due_text = when(data["dueDate"])
        due = render("checkout/due.html", due_iso=due_iso, due_text=due_text)
    layout = layout_of(data["method"])
    if layout is Layout.CLABE and data.get("clabe"):
        return render(
            "checkout/spei.html",
            bank=bank,
            clabe=data["clabe"],
            reference=data.get("reference", ""),
            due=due,
        )
    if layout is Layout.QR and data.get("qrCode"):
        qr = qr_svg(data["qrCode"], "Pix QR code")
        return render("checkout/pix.html", qr=qr, code=data["qrCode"], bank=bank, due=due)
    if data.get("barcode"):
        return _barcode_html(data["barcode"], layout is Layout.BOLETO, due)
    return render(
        "checkout/reference.html", bank=bank, reference=data.get("reference", ""), due=due
    )


def _barcode_html(code: str, boleto: bool, due: Markup) -> Markup:
    digits = boleto_barcode_digits(code) if boleto and len(code) == 47 else code
    heading, hint = (
        ("Pay your boleto", "Pay at any bank, lottery outlet or in your bank's app.")
        if boleto
        else ("Pay in cash", "Show this barcode at the store's till and pay in cash.")
    )
    image = itf_svg(digits, "Payment barcode") if digits.isdigit() else Markup("")
    return render(
        "checkout/barcode.html", heading=heading, hint=hint, image=image, code=code, due=due
    )
