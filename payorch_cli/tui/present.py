"""Pure presentation: API data -> strings and rich `Text`, never raising on odd data.

Every function accepts whatever the server sent (a missing key, a string where a number was
expected) and shows it as well as it can: a bad response must never crash the UI.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from rich.text import Text

DASH = "—"

# Colour is a hint, never the only cue: the status word is always written out, so NO_COLOR
# (which Textual turns into monochrome) loses nothing.
STATUS_STYLES = {
    "pending": "bold yellow",
    "completed": "bold green",
    "failed": "bold red",
    "refunded": "bold magenta",
    "expired": "dim",
    "chargeback": "bold white on red",
}
DELIVERY_STYLES = {
    "succeeded": "bold green",
    "pending": "bold yellow",
    "failed": "bold red",
    "stored": "bold cyan",
    "cancelled": "dim",
}


def obj(value: Any) -> dict[str, Any]:
    """`value` if it is a JSON object, else an empty one: read fields without checking."""
    return value if isinstance(value, dict) else {}


def items(value: Any) -> list[Any]:
    """`value` if it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def text(value: Any) -> str:
    if value is None or value == "":
        return DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    return str(value)


def decimal(value: Any) -> Decimal | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = Decimal(str(value))
    except (InvalidOperation, ValueError):
        return None
    return number if number.is_finite() else None


def money(value: Any, currency: str | None = None) -> str:
    number = decimal(value)
    if number is None:
        return text(value)
    shown = f"{number:,.2f}"
    return f"{shown} {currency}" if currency else shown


def parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def when(value: Any, *, seconds: bool = True) -> str:
    """Simulated time as the server writes it (UTC), short: `11-22 03:44:38`."""
    parsed = parse_time(value)
    if parsed is None:
        return text(value)
    return parsed.astimezone(UTC).strftime("%m-%d %H:%M:%S" if seconds else "%m-%d %H:%M")


def full_time(value: Any) -> str:
    parsed = parse_time(value)
    if parsed is None:
        return text(value)
    return parsed.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S") + "Z"


def duration(seconds: float) -> str:
    """A clock offset, compact: `+2d 3h`, `+45m`, `+12s`."""
    seconds = max(0.0, seconds)
    if seconds < 1:
        return ""
    days, rest = divmod(int(seconds), 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{days}d"] if days else []
    if hours:
        parts.append(f"{hours}h")
    if minutes and not days:
        parts.append(f"{minutes}m")
    if secs and not days and not hours:
        parts.append(f"{secs}s")
    return "+" + " ".join(parts[:2])


def status_text(status: Any, *, chargeback: bool = False) -> Text:
    word = text(status)
    shown = Text(word, style=STATUS_STYLES.get(word, ""))
    if chargeback:
        shown.append(" cb", style=STATUS_STYLES["chargeback"])
    return shown


def delivery_status_text(status: Any) -> Text:
    word = text(status)
    return Text(word, style=DELIVERY_STYLES.get(word, ""))


def http_status_text(attempt: dict[str, Any] | None) -> Text:
    if not attempt:
        return Text(DASH, style="dim")
    if attempt.get("stored"):
        return Text("stored", style="cyan")
    status = attempt.get("httpStatus")
    if isinstance(status, int) and not isinstance(status, bool):
        return Text(str(status), style="green" if 200 <= status < 300 else "bold red")
    return Text("ERR", style="bold red")


def latency(attempt: dict[str, Any] | None) -> str:
    value = decimal((attempt or {}).get("durationMs"))
    return DASH if value is None else f"{value:.0f} ms"


def transaction_id(tx: dict[str, Any]) -> str:
    return text(tx.get("id") or tx.get("transactionId"))


def search_matches(
    tx: dict[str, Any], text: str, *, status: str | None = None, method: str | None = None
) -> bool:
    """Whether `text` (any case) is part of the transaction's id or merchantOrderId, and the
    transaction passes the status and method filters (None: any)."""
    needle = text.strip().casefold()
    if status is not None and tx.get("status") != status:
        return False
    if method is not None and tx.get("paymentMethod") != method:
        return False
    values = (tx.get("id") or tx.get("transactionId"), tx.get("merchantOrderId"))
    return bool(needle) and any(
        isinstance(value, str) and needle in value.casefold() for value in values
    )


def fx_rows(tx: dict[str, Any]) -> list[tuple[str, str]]:
    """The conversion chain: presentment -> USD headline -> the buyer's local currency."""
    rows: list[tuple[str, str]] = []
    amount = decimal(tx.get("amount"))
    if tx.get("inputCurrency"):
        rows.append(("presentment", money(tx.get("inputAmount"), text(tx.get("inputCurrency")))))
        given = decimal(tx.get("inputAmount"))
        if given and amount:
            rows.append(
                (
                    "  → USD rate",
                    f"1 {tx['inputCurrency']} = {amount / given:.6f} USD (after markup)",
                )
            )
    rows.append(("headline", money(tx.get("amount"), text(tx.get("currency") or "USD"))))
    local = decimal(tx.get("amountLocal"))
    local_currency = text(tx.get("currencyLocal"))
    rows.append(("buyer pays", money(tx.get("amountLocal"), local_currency)))
    if amount and local is not None and local_currency != "USD":
        rows.append(("  rate", f"{local / amount:.4f} {local_currency}/USD"))
    return rows


def fee_rows(tx: dict[str, Any]) -> list[tuple[str, str]]:
    fees = obj(tx.get("fees"))
    rows = [(f"{key}", money(fees.get(key), "USD")) for key in ("platform", "provider", "network")]
    rows.extend(
        (key, money(value, "USD"))
        for key, value in fees.items()
        if key not in {"platform", "provider", "network", "total"}
    )
    rows.append(("total fees", money(fees.get("total"), "USD")))
    amount, total = decimal(tx.get("amount")), decimal(fees.get("total"))
    if amount is not None and total is not None:
        rows.append(("net of fees", money(amount - total, "USD")))
    settlement = obj(tx.get("settlement"))
    if settlement:
        delay = text(settlement.get("delay"))
        rows.append(("settlement", f"{text(settlement.get('status'))} ({delay})"))
    return rows


def flatten(value: Any, prefix: str = "") -> list[tuple[str, str]]:
    """Every field of a JSON object as (dotted path, shown value), in the server's order."""
    if isinstance(value, dict) and value:
        rows: list[tuple[str, str]] = []
        for key, item in value.items():
            rows.extend(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return rows
    return [(prefix or "value", text(value))]


def filters_line(status: str | None, method: str | None) -> Text:
    """The `s status:… m method:…` line of a filtered list (transactions, requests)."""
    return Text.assemble(
        ("s", "bold"),
        " status:",
        (status or "all", "bold" if status else "dim"),
        "  ",
        ("m", "bold"),
        " method:",
        (method or "all", "bold" if method else "dim"),
    )


def merged_keys(rows: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """(where, key, what) rows with the keys of one action merged, in first-seen order:
    `s` and `S` (Status, forwards and back) become one `s S` row."""
    merged: dict[tuple[str, str], list[str]] = {}
    for where, key, what in rows:
        keys = merged.setdefault((where, what), [])
        if key not in keys:
            keys.append(key)
    return [(where, " ".join(keys), what) for (where, what), keys in merged.items()]


def cell_width(value: Any) -> int:
    """Cells a table cell's value takes (a str or rich Text), on one line."""
    from rich.cells import cell_len

    plain = value.plain if isinstance(value, Text) else str(value)
    return max((cell_len(line) for line in plain.splitlines()), default=0)


def fitting_columns(
    widths: dict[str, int], room: int, give_way: tuple[str, ...], padding: int = 2
) -> list[str]:
    """The columns (in their order) that fit in `room` cells, each `widths[key] + padding`
    wide: the `give_way` ones leave first to last until the rest fit; the others always stay
    (ids and statuses are never the ones dropped). `room` <= 0 (not laid out yet): all."""
    keys = list(widths)
    if room <= 0:
        return keys
    for key in give_way:
        if sum(widths[k] + padding for k in keys) <= room:
            break
        if key in keys:
            keys.remove(key)
    return keys


def squeeze(value: str, width: int) -> str:
    """`value` cut to `width` cells with `…` in the middle, its start and end kept (a path's
    ids are at its end, its resource at its start)."""
    from rich.cells import cell_len

    if cell_len(value) <= width or width < 5:
        return value
    tail = (width - 1) * 2 // 3
    head = width - 1 - tail
    return value[:head] + "…" + value[len(value) - tail :]


def owner_and_quota(whoami: dict[str, Any]) -> str:
    """`owner alice · 3/20 ns` from GET /_sim/team/whoami: whose the namespace is, and how many
    of its owner's quota are taken; "" for a namespace nobody owns (made by the admin)."""
    owner = whoami.get("owner")
    if not isinstance(owner, str) or not owner:
        return ""
    count, quota = whoami.get("namespaces"), whoami.get("maxNamespaces")
    if isinstance(count, int) and isinstance(quota, int):
        return f"owner {owner} · {count}/{quota} ns"
    return f"owner {owner}"
