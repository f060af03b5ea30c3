"""API objects as rich renderables (for people) or JSON text (for scripts)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from payorch_cli.render.layout import Detail

# rich is imported by the functions that draw: `clock show` and every --json output need none
# of it, and it is 25 ms of their start.

# Shown first, in this order, when an object has them; the rest follow alphabetically.
LEADING = (
    "id",
    "transactionId",
    "type",
    "status",
    "amount",
    "currency",
    "amountLocal",
    "currencyLocal",
    "paymentMethodId",
    "method",
    "methodId",
    "createdAt",
)


def to_json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False)


JSON_HINT = "--json for every field"


def _ordered(obj: dict[str, Any]) -> list[str]:
    lead = [k for k in LEADING if k in obj]
    return lead + sorted(k for k in obj if k not in lead)


def object_table(title: str, obj: dict[str, Any], fields: Iterable[str] | None = None) -> Detail:
    """An object's fields, one per line (nested ones as `fees.total`, empty ones left out); with
    no `fields` chosen, every field that has a value, then where the rest is."""
    from payorch_cli.render.layout import Detail, flatten

    chosen = list(fields) if fields is not None else _ordered(obj)
    picked = {name: obj[name] for name in chosen if name in obj}
    rows = [(name, text) for name, text in flatten(picked) if text not in title.split()]
    return Detail(title, rows, JSON_HINT if fields is None else None)


def clock_text(state: dict[str, Any]) -> str:
    from payorch_cli.durations import format_duration

    offset = float(state.get("offsetSeconds") or 0)
    # Past a minute, the offset's milliseconds are the real time the advance's jobs took.
    ahead = format_duration(offset, resolution=1 if offset >= 60 else 0.001) if offset > 0 else "0s"
    return f"{state['now']}  (simulated; {ahead} ahead of real time)"
