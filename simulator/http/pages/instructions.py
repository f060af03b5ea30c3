"""The payment page's content (`/c/<transaction_id>`): whom the buyer pays and how much, the
status, and while pending the rail's instructions (its layout in `domain/rails.py`) with the
steps to pay; once closed, the outcome. Everything in the page's language.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING

from simulator.clock import isoformat, parse_iso
from simulator.domain.rails import Layout, layout_of
from simulator.http.pages.codes import boleto_barcode_digits, itf_svg, qr_svg
from simulator.http.pages.html import Markup, join, link, render
from simulator.i18n import N_, PageLocale

if TYPE_CHECKING:
    from simulator.domain.catalog import Catalog, PaymentMethod
    from simulator.domain.records import TransactionRecord

Decimals = Callable[[str], int]  # minor-unit digits of a currency (Fx.decimals)

STATUS_TEXT = {
    "pending": N_("Waiting for your payment"),
    "completed": N_("Payment received"),
    "failed": N_("Payment failed"),
    "expired": N_("Payment expired"),
    "refunded": N_("Payment refunded"),
    "chargeback": N_("Payment disputed"),
}
CLOSED_TEXT = {
    "completed": N_("Thank you: this payment has been received."),
    "refunded": N_("This payment was received and later refunded."),
    "chargeback": N_("This payment was received and is now disputed."),
}
CLOSED_DEFAULT = N_("This payment can no longer be paid.")
STATUS_ONLY = N_(
    "To pay, open the payment link the shop gave you. This page shows the payment's status."
)

# How to pay, step by step, for each layout; a rail whose steps differ from its layout's has its
# own entry in RAIL_STEPS. Placeholders: $amount (what to pay), $method (the method's name),
# $payee (the name the buyer's bank shows: the provider's beneficiary, else the shop).
STEPS: dict[Layout, tuple[str, ...]] = {
    Layout.CLABE: (
        N_("Open your bank's app or online banking and choose a SPEI transfer."),
        N_("Enter the CLABE above as the destination account."),
        N_("Send exactly $amount and write the reference in the payment concept."),
        N_("Confirm the transfer. This page changes as soon as the payment arrives."),
    ),
    Layout.QR: (
        N_("Open your bank's app and choose Pix."),
        N_("Scan the QR code, or choose Pix Copia e Cola and paste the code."),
        N_("Check that you are paying $amount to $payee, then confirm."),
        N_("This page changes as soon as the payment arrives."),
    ),
    Layout.CASH_BARCODE: (
        N_("Go to a $method payment point (a store or an agent) before the due date."),
        N_("Show the barcode, printed or on your phone, or read out the number below it."),
        N_("Pay exactly $amount in cash."),
        N_("Keep your receipt: it proves your payment."),
    ),
    Layout.BOLETO: (
        N_("Open your bank's app and choose to pay a boleto, or go to a bank or lottery outlet."),
        N_("Scan the barcode or type the number below it."),
        N_("Check that you are paying $amount to $payee, then pay before the due date."),
        N_("A boleto can take up to two business days to be confirmed."),
    ),
    Layout.REFERENCE: (
        N_("Pay with $method and quote the reference above."),
        N_("Pay exactly $amount before the due date."),
        N_("This page changes as soon as the payment arrives."),
    ),
}
RAIL_STEPS: dict[str, tuple[str, ...]] = {
    "oxxo": (
        N_("Go to any OXXO store before the due date and tell the cashier you pay with OXXO Pay."),
        N_("Show the barcode, printed or on your phone, or read out the number below it."),
        N_("Pay exactly $amount in cash. The store may charge a small fee."),
        N_("Keep your receipt: it proves your payment."),
    ),
}


def status_text(loc: PageLocale, status: str) -> str:
    return loc.gettext(STATUS_TEXT[status]) if status in STATUS_TEXT else status


def closed_text(loc: PageLocale, status: str) -> str:
    return loc.gettext(CLOSED_TEXT.get(status, CLOSED_DEFAULT))


def moment(loc: PageLocale, at: float | str) -> dict[str, str]:
    """`iso` (machine, UTC) and `text` (the buyer's language and time zone) of a <time>."""
    when = parse_iso(at) if isinstance(at, str) else datetime.fromtimestamp(at, UTC)
    return {"iso": isoformat(when), "text": loc.moment(when)}


def test_badge(loc: PageLocale, method: PaymentMethod | None) -> Markup:
    """The "test" badge of a sandbox built-in method (`sbx_*`)."""
    if method is None or not method.sandbox_only:
        return Markup("")
    return render("checkout/test_badge.html", loc, id=method.id)


def instructions_html(
    loc: PageLocale,
    tx: TransactionRecord,
    catalog: Catalog,
    decimals: Decimals,
    *,
    status_only: bool = False,
) -> Markup:
    """The page's content; `status_only` (a production hosted rail opened by its bare id) shows
    what is paid and its status, and no way to the provider's page."""
    status = tx["status"]
    shop = catalog.shops[tx["shopId"]].name if tx["shopId"] in catalog.shops else ""
    merchant = catalog.merchants.get(tx["merchantId"])
    places = decimals(tx["currencyLocal"])
    local = Decimal(tx["amountLocal"])
    amount, currency = loc.money(local, tx["currencyLocal"], places)
    if status == "pending" and status_only:
        body = render("checkout/pending.html", loc, body=loc.gettext(STATUS_ONLY))
    elif status == "pending":
        payable = loc.money_text(local, tx["currencyLocal"], places)
        payee = tx["paymentData"].get("beneficiaryName") or shop
        values = {"amount": payable, "payee": payee, "method": loc.data(tx["paymentMethodName"])}
        body = render("checkout/pending.html", loc, body=_payment_data_html(loc, tx, values))
    else:
        body = render("checkout/closed.html", loc, message=closed_text(loc, status))
    order_id = tx.get("merchantOrderId")
    return render(
        "checkout/instructions.html",
        loc,
        tx_id=tx["id"],
        status=status,
        status_url=f"/c/{tx['id']}/status?lang={loc.tag}",
        status_text=status_text(loc, status),
        shop=shop,
        merchant=(
            render("checkout/merchant.html", loc, name=merchant.name)
            if merchant is not None and merchant.name != shop
            else Markup("")
        ),
        order=render("checkout/order.html", loc, order_id=order_id) if order_id else Markup(""),
        icon=tx["iconPath"],
        method_name=loc.data(tx["paymentMethodName"]),
        badge=test_badge(loc, catalog.methods.get(tx["paymentMethodId"])),
        amount=amount,
        amount_value=f"{local:.{places}f}",
        currency=currency,
        currency_code=currency,
        body=body,
        return_link=link(loc, "return", tx.get("returnUrl"), loc.gettext(N_("Return to the shop"))),
    )


def _copy(loc: PageLocale, target: str) -> Markup:
    return render("checkout/copy_button.html", loc, target=target)


def _steps(loc: PageLocale, slug: str, layout: Layout, values: dict[str, str]) -> Markup:
    steps = RAIL_STEPS.get(slug) or STEPS[layout]
    items = join(render("checkout/step.html", loc, text=loc.gettext(s, **values)) for s in steps)
    return render("checkout/steps.html", loc, items=items)


def _payment_data_html(loc: PageLocale, tx: TransactionRecord, values: dict[str, str]) -> Markup:
    data = tx["paymentData"]
    facts = [
        render("checkout/fact.html", loc, term=loc.gettext(term), fact_id=fact_id, value=data[key])
        for key, term, fact_id in (
            ("bankName", N_("Bank"), "bank-name"),
            ("beneficiaryName", N_("Beneficiary"), "beneficiary"),
        )
        if data.get(key)
    ]
    bank = join(facts)
    due = Markup("")
    if data.get("dueDate"):
        date = render("checkout/due_date.html", loc, **moment(loc, data["dueDate"]))
        due = render("checkout/due.html", loc, date=date)
    layout = layout_of(data["method"])
    if layout is Layout.CLABE and data.get("clabe"):
        return render(
            "checkout/spei.html",
            loc,
            bank=bank,
            clabe=data["clabe"],
            copy_clabe=_copy(loc, "clabe"),
            reference=data.get("reference", ""),
            copy_reference=_copy(loc, "reference"),
            due=due,
            steps=_steps(loc, data["method"], layout, values),
        )
    if layout is Layout.QR and data.get("qrCode"):
        return render(
            "checkout/pix.html",
            loc,
            qr=qr_svg(data["qrCode"], loc.gettext(N_("Pix QR code"))),
            code=data["qrCode"],
            copy_code=_copy(loc, "pix-code"),
            bank=bank,
            due=due,
            steps=_steps(loc, data["method"], layout, values),
        )
    if data.get("barcode"):
        boleto = layout is Layout.BOLETO
        shown = layout if layout in (Layout.BOLETO, Layout.CASH_BARCODE) else Layout.CASH_BARCODE
        return _barcode_html(
            loc, data["barcode"], boleto, due, _steps(loc, data["method"], shown, values)
        )
    return render(
        "checkout/reference.html",
        loc,
        bank=bank,
        reference=data.get("reference", ""),
        copy_reference=_copy(loc, "reference"),
        due=due,
        steps=_steps(loc, data["method"], Layout.REFERENCE, values),
    )


def _barcode_html(loc: PageLocale, code: str, boleto: bool, due: Markup, steps: Markup) -> Markup:
    digits = boleto_barcode_digits(code) if boleto and len(code) == 47 else code
    heading, hint = (
        (N_("Pay your boleto"), N_("Pay at any bank, lottery outlet or in your bank's app."))
        if boleto
        else (N_("Pay in cash"), N_("Show this barcode at the store's till and pay in cash."))
    )
    image = itf_svg(digits, loc.gettext(N_("Payment barcode"))) if digits.isdigit() else Markup("")
    return render(
        "checkout/barcode.html",
        loc,
        heading=loc.gettext(heading),
        hint=loc.gettext(hint),
        image=image,
        code=code,
        copy_code=_copy(loc, "barcode"),
        due=due,
        steps=steps,
        print=render("checkout/print_button.html", loc),
    )
