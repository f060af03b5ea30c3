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


def _widest(rows: list[dict[str, Any]], *keys: str) -> int:
    """The longest value of the first key present per row: a column given this min_width keeps
    every id whole at 80 columns, the other columns fold instead."""
    return max((len(str(next((r[k] for k in keys if r.get(k)), ""))) for r in rows), default=2)


def _minute(stamp: Any) -> str:
    return str(stamp or "")[:16].replace("T", " ")


def payments_table(page: dict[str, Any]) -> RenderableType:
    """GET /payments as a table: the id whole (no_wrap), then status, money, method, order id."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    rows = list(page.get("data") or [])
    table = Table(box=None, padding=(0, 1, 0, 0), header_style="bold")
    table.add_column(
        "id", no_wrap=True, style="cyan", min_width=_widest(rows, "id", "transactionId")
    )
    table.add_column("status", no_wrap=True, min_width=_widest(rows, "status"))
    table.add_column("amount", justify="right", overflow="fold")
    table.add_column("local", justify="right", overflow="fold")
    table.add_column("method", overflow="fold")
    table.add_column("order", overflow="fold")
    table.add_column("created", overflow="fold")
    for row in rows:
        created = (row.get("timestamps") or {}).get("created")
        table.add_row(
            str(row.get("id") or row.get("transactionId") or ""),
            str(row.get("status") or ""),
            _money(row.get("amount"), row.get("currency")),
            _money(row.get("amountLocal"), row.get("currencyLocal")),
            str(row.get("paymentMethodId") or ""),
            str(row.get("merchantOrderId") or ""),
            _minute(created),
        )
    footer = Text(page_footer(page.get("pagination") or {}, len(rows), "payments"), style="dim")
    return Group(table, footer) if rows else footer


def payouts_table(page: dict[str, Any]) -> RenderableType:
    """GET /me/payout/send as a table."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    rows = list(page.get("data") or [])
    table = Table(box=None, padding=(0, 1, 0, 0), header_style="bold")
    table.add_column("id", no_wrap=True, style="cyan", min_width=_widest(rows, "id"))
    table.add_column("status", no_wrap=True, min_width=_widest(rows, "status"))
    table.add_column("amount", justify="right", overflow="fold")
    table.add_column("method", overflow="fold")
    table.add_column("created", overflow="fold")
    failures = any(row.get("failureReason") for row in rows)
    if failures:
        table.add_column("failure", overflow="fold")
    for row in rows:
        cells = [
            str(row.get("id") or ""),
            str(row.get("status") or ""),
            _money(row.get("amount"), row.get("currency")),
            str(row.get("methodId") or ""),
            _minute(row.get("createdAt")),
        ]
        table.add_row(*cells, *([str(row.get("failureReason") or "")] if failures else []))
    footer = Text(page_footer(page.get("pagination") or {}, len(rows), "payouts"), style="dim")
    return Group(table, footer) if rows else footer


def payment_view(payment: dict[str, Any]) -> RenderableType:
    ident = payment.get("id") or payment.get("transactionId") or "?"
    return object_table(f"payment {ident}", payment)


def refund_view(refund: dict[str, Any]) -> RenderableType:
    return object_table(f"refund {refund.get('refundId', '?')}", refund)


def payout_view(answer: dict[str, Any]) -> RenderableType:
    payout = answer.get("payout") if isinstance(answer.get("payout"), dict) else answer
    assert isinstance(payout, dict)
    return object_table(f"payout {payout.get('id', '?')}", payout)


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
        parts.append(object_table("fees", {k: _money(v, currency) for k, v in fees.items()}))
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
