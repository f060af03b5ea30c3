"""Payments, refunds, payouts and the balance (`payorch payments|payouts|balance`) as rich
renderables: one table per list, one field table per object. Pure: data in, renderables out."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from payorch_cli.render.objects import object_table

if TYPE_CHECKING:
    from rich.console import RenderableType


def _money(amount: Any, currency: Any) -> str:
    return "" if amount is None else f"{amount} {currency or ''}".strip()


def page_footer(pagination: dict[str, Any], shown: int, noun: str) -> str:
    """`3 of 57 payments (offset 0, page 1 of 3)`; `no payments` for an empty page."""
    total = int(pagination.get("total") or 0)
    if total == 0:
        return f"no {noun}"
    limit = int(pagination.get("limit") or shown or 1)
    offset = int(pagination.get("offset") or 0)
    pages = int(pagination.get("pages") or math.ceil(total / limit))
    page = offset // limit + 1
    return f"{shown} of {total} {noun} (offset {offset}, page {page} of {pages})"


def _minute(stamp: Any) -> str:
    return str(stamp or "")[:16].replace("T", " ")


def payments_table(page: dict[str, Any]) -> RenderableType:
    """GET /payments as a list: whole ids; the order id goes under its row when it does not fit."""
    from payorch_cli.render.layout import Column, Columns

    rows = list(page.get("data") or [])
    columns = (
        Column("id", style="cyan"),
        Column("status"),
        Column("amount", right=True),
        Column("local", right=True),
        Column("method"),
        Column("created", spill=True),
        Column("order", spill=True),
    )
    cells = [
        (
            str(row.get("id") or row.get("transactionId") or ""),
            str(row.get("status") or ""),
            _money(row.get("amount"), row.get("currency")),
            _money(row.get("amountLocal"), row.get("currencyLocal")),
            str(row.get("paymentMethodId") or ""),
            _minute((row.get("timestamps") or {}).get("created")),
            str(row.get("merchantOrderId") or ""),
        )
        for row in rows
    ]
    return Columns(columns, cells, page_footer(page.get("pagination") or {}, len(rows), "payments"))


def payouts_table(page: dict[str, Any]) -> RenderableType:
    """GET /me/payout/send as a list; a failure reason goes under its row."""
    from payorch_cli.render.layout import Column, Columns

    rows = list(page.get("data") or [])
    columns = (
        Column("id", style="cyan"),
        Column("status"),
        Column("amount", right=True),
        Column("method"),
        Column("created", spill=True),
        Column("failure", spill=True),
    )
    cells = [
        (
            str(row.get("id") or ""),
            str(row.get("status") or ""),
            _money(row.get("amount"), row.get("currency")),
            str(row.get("methodId") or ""),
            _minute(row.get("createdAt")),
            str(row.get("failureReason") or ""),
        )
        for row in rows
    ]
    return Columns(columns, cells, page_footer(page.get("pagination") or {}, len(rows), "payouts"))


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def payment_view(payment: dict[str, Any]) -> RenderableType:
    """What a person acts on: status, money, method, the order, and whatever the buyer needs to
    pay (PIX code, barcode, checkout URL), each whole; the rest is for --json."""
    from payorch_cli.render.layout import Detail, flatten

    ident = payment.get("id") or payment.get("transactionId") or "?"
    fees = _object(payment.get("fees"))
    local = _money(payment.get("amountLocal"), payment.get("currencyLocal"))
    amount = _money(payment.get("amount"), payment.get("currency"))
    summary = {
        "status": payment.get("status"),
        "amount": amount + (f" ({local})" if local and local != amount else ""),
        "method": " ".join(
            str(payment[k]) for k in ("paymentMethodId", "paymentMethodName") if payment.get(k)
        ),
        "country": payment.get("country"),
        "order": payment.get("merchantOrderId"),
        "created": (payment.get("timestamps") or {}).get("created"),
        "expiresAt": payment.get("expiresAt"),
        "fees": _money(fees.get("total"), payment.get("currency")),
        "failure": payment.get("failureReason"),
    }
    data = _object(payment.get("paymentData"))
    to_pay = {k: v for k, v in data.items() if k not in ("method", "methodName")}
    links = {k: payment.get(k) for k in ("checkoutUrl", "paymentFormUrl")}
    rows = flatten(summary) + flatten(to_pay) + flatten(links)
    return Detail(f"payment {ident}", rows, "--json for every field (fees, settlement, tags)")


def refund_view(refund: dict[str, Any]) -> RenderableType:
    return object_table(f"refund {refund.get('refundId', '?')}", refund)


def payout_view(answer: dict[str, Any]) -> RenderableType:
    """Status, money, method, recipient, dates and why it failed; the rest is for --json."""
    from payorch_cli.render.layout import Detail, flatten

    payout = answer.get("payout") if isinstance(answer.get("payout"), dict) else answer
    assert isinstance(payout, dict)
    summary = {
        "status": payout.get("status"),
        "amount": _money(payout.get("amount"), payout.get("currency")),
        "method": payout.get("methodId"),
        "recipient": _object(payout.get("recipient")),
        "created": payout.get("createdAt"),
        "failure": payout.get("failureReason"),
        "providerRef": payout.get("providerRef"),
    }
    title = f"payout {payout.get('id', '?')}"
    return Detail(title, flatten(summary), "--json for every field (timestamps, provider)")


# GET /me/balance: these first, as a small table each; the lists (movements, reserve schedule)
# are long and are for --json.
_BALANCE_HEAD = ("merchantId", "currency", "tier", "trustScore", "rollingReservePct")


def balance_view(answer: dict[str, Any]) -> RenderableType:
    from rich.console import Group
    from rich.text import Text

    currency = answer.get("currency") or ""
    parts: list[RenderableType] = [object_table("merchant", answer, _BALANCE_HEAD)]
    balance = answer.get("balance")
    if isinstance(balance, dict):
        money = {name: _money(value, currency) for name, value in balance.items()}
        parts.append(object_table("balance", money, ("available", "pending", "frozen", "reserve")))
    fees = answer.get("feeSummary")
    if isinstance(fees, dict):
        money = {k: _money(v, currency) for k, v in fees.items()}
        parts.append(object_table("fees", money, tuple(money)))
    warnings = answer.get("ledgerWarnings") or []
    for warning in warnings:
        parts.append(Text(f"warning: {warning}", style="yellow"))
    movements = answer.get("movements") or []
    if movements:
        parts.append(Text(f"{len(movements)} movements (--json lists them)", style="dim"))
    return Group(*parts)


def payout_balances_table(answer: dict[str, Any]) -> RenderableType:
    """GET /me/payout/balance: one row per currency."""
    from rich.table import Table

    table = Table(title="payout balances", title_justify="left", box=None, padding=(0, 1))
    for name in ("currency", "available", "pending", "reserved"):
        table.add_column(name, justify="left" if name == "currency" else "right", no_wrap=True)
    for entry in answer.get("balances") or []:
        table.add_row(
            *(str(entry.get(name, "")) for name in ("currency", "available", "pending", "reserved"))
        )
    return table
