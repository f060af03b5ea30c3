"""`payorch methods`: the shop's payment methods, one line each at 80 columns (pure)."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

COLUMNS = ("id", "rail", "cty", "channel", "limits", "needs", "ok")
# The request fields a rail asks for, in a word each, so that a line holds at 80 columns.
SHORT = {"userName": "name", "userEmail": "email", "userPhone": "phone", "documentId": "doc"}
CHANNEL = {"ONLINE": "online", "CASH": "cash", "CREDIT_CARD": "card"}


def _limits(entry: dict[str, Any]) -> str:
    limits = entry.get("currencyLimits") or []
    if not limits:
        return ", ".join(entry.get("currencies") or [])
    first = limits[0]
    return f"{first['currency']} {first['min']}-{first['max']}"


def _needs(requirements: dict[str, Any] | None) -> str:
    if requirements is None:
        return "?"
    keys = [field["key"] for field in requirements.get("requiredFields") or []]
    return ",".join(SHORT.get(key, key) for key in keys) if keys else "-"


def methods_table(
    listing: dict[str, Any], requirements: dict[str, dict[str, Any]]
) -> RenderableType:
    """GET /payment-methods, with what each method needs (GET /_sim/payment-methods) where
    known: `?` when the credential could not ask (a production key)."""
    table = Table(box=None, padding=(0, 1), pad_edge=False)
    for name in COLUMNS:
        table.add_column(name, no_wrap=True)
    for entry in listing.get("methods") or []:
        table.add_row(
            entry["paymentMethodId"],
            entry["method"],
            entry["countryIso3"],
            CHANNEL.get(entry["channel"], entry["channel"]),
            _limits(entry),
            _needs(requirements.get(entry["paymentMethodId"])),
            "yes" if entry.get("routable") else "no",
        )
    shop = listing.get("shop") or {}
    footer = Text(
        f"{listing.get('count', 0)} of {listing.get('totalAvailable', 0)} methods of "
        f"{shop.get('id', '?')} ({listing.get('environment', '?')}); "
        "send an id whose ok is yes as paymentMethodId; needs: the buyer fields it asks for "
        "(doc: documentId); --json for every field.",
        style="dim",
    )
    return Group(table, footer)
