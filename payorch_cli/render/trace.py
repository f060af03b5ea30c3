"""The cascade trace of a payment or payout (GET /_sim/{payments,payouts}/{id}/trace) for people:
one line per entry, simulated time, kind, and what it says. Shared by `payorch trace` and the
TUI's transaction detail."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import RenderableType

# The fields each kind leads with, in this order; any others follow as key=value.
LEADING: dict[str, tuple[str, ...]] = {
    "routing_attempt": ("provider", "outcome", "reason"),
    "provider_chosen": ("provider", "reason"),
    "callback_received": ("provider", "outcome", "source"),
    "callback_ignored": ("provider", "outcome", "reason"),
    "poll": ("provider", "answer", "result"),
    "status_changed": ("from", "to", "cause"),
    "event_emitted": ("type", "eventId"),
    "delivery": ("result", "httpStatus", "error", "attempt", "url", "eventId"),
}
# Fields too long or too internal for the one-line summary (the JSON has them all).
QUIET = {"deliveryId", "webhookId", "trigger", "nextAttemptAt", "deliveryStatus"}
KIND_STYLES = {
    "routing_attempt": "yellow",
    "provider_chosen": "green",
    "callback_ignored": "red",
    "status_changed": "bold magenta",
    "event_emitted": "cyan",
    "delivery": "blue",
}


def trace_path(subject_id: str) -> str:
    """The control-plane path of an id's trace: a TXN-… is a payment, anything else a payout."""
    from urllib.parse import quote

    kind = "payments" if subject_id.startswith("TXN-") else "payouts"
    return f"/_sim/{kind}/{quote(subject_id, safe='')}/trace"


def clock_time(at: str) -> str:
    """`2026-05-04T12:00:01.250Z` as `2026-05-04 12:00:01.250` (simulated time, UTC)."""
    return at.replace("T", " ").removesuffix("Z")


def entry_details(entry: dict[str, Any]) -> str:
    kind = entry.get("kind", "")
    if kind == "created":
        return _created(entry)
    if kind == "status_changed":
        return f"{entry.get('from')} → {entry.get('to')}  ({entry.get('cause')})"
    lead = LEADING.get(kind, ())
    parts: list[str] = []
    for name in lead:
        value = entry.get(name)
        if value is not None:
            parts.append(str(value) if name in ("provider", "type") else f"{name}={value}")
    for name, value in entry.items():
        if name in ("at", "kind") or name in lead or name in QUIET or value is None:
            continue
        parts.append(f"{name}={value}")
    return "  ".join(parts)


def _created(entry: dict[str, Any]) -> str:
    """What was asked, short: `pix (1010)  120.00 USD = 612.50 BRL`; a payout's method, amount."""
    if "paymentMethodId" in entry:
        text = f"{entry.get('paymentMethod')} ({entry.get('paymentMethodId')})  "
        text += (
            f"{entry.get('amount')} USD = {entry.get('amountLocal')} {entry.get('currencyLocal')}"
        )
        if entry.get("sandboxSimulate"):
            text += f"  Sandbox-Simulate={entry['sandboxSimulate']}"
    else:
        text = f"{entry.get('methodId')} ({entry.get('rail')})  "
        text += f"{entry.get('amount')} {entry.get('currency')}"
    if entry.get("source"):
        text += f"  source={entry['source']}"
    return text


def trace_rows(doc: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [
        (clock_time(str(entry.get("at", ""))), str(entry.get("kind", "")), entry_details(entry))
        for entry in doc.get("entries", [])
    ]


def trace_heading(doc: dict[str, Any]) -> str:
    subject, count = doc.get("subject", "payment"), len(doc.get("entries", []))
    text = f"Trace of {subject} {doc.get('id')} ({doc.get('environment')}): {count} entries"
    if doc.get("truncated"):
        text += f", {doc['truncated']} older ones dropped after the first"
    return text


def trace_renderable(doc: dict[str, Any]) -> RenderableType:
    from rich.table import Table

    table = Table(title=trace_heading(doc), title_justify="left", box=None, padding=(0, 2))
    table.add_column("simulated time", no_wrap=True, style="dim")
    table.add_column("kind", no_wrap=True)
    table.add_column("details", overflow="fold")
    for at, kind, details in trace_rows(doc):
        table.add_row(at, f"[{KIND_STYLES.get(kind, 'default')}]{kind}[/]", details)
    return table
