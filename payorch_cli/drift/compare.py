"""What "the same answer" means (issue 35): a pure comparison of the upstream's recorded answer
with payorch's answer to the same request.

Compared: the HTTP status; the error `code` and `type`; which fields are present and their JSON
types, everywhere in the body; the values of enum-like fields (statuses, types, codes,
currencies, methods, booleans, lists of event names); money fields (amounts, fees, balances,
rates) within the currency's precision. Never compared by value: ids, timestamps, signatures,
request ids, URLs (their hosts differ by nature), tokens, free text (`message`, names) and other
numbers (counts of a world's own history, scores); their presence and type still are.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

# The same idea as payorch_cli/record/values.py's ID_KEY and TIMESTAMP_KEY (kept here so
# drift does not depend on the recorder's module layout): a key naming a server-made value.
ID_KEY = re.compile(r"^(id|token|clabe|reference|barcode|qrCode)$|(Id|Token|_id|_token|Ref)$")
# A path segment made by a server (record_values.MADE_ID): TXN-…, po_…, a CLABE.
MADE_ID = re.compile(
    r"^(?:[A-Z]{2,5}-[0-9A-Z]{8,}|[A-Za-z]{2,5}[-_](?=[A-Za-z0-9]*\d)[A-Za-z0-9]{8,}|\d{10,})$"
)
TIMESTAMP_KEY = re.compile(r"(At|_at|Date|date|timestamps?|timestamp|now|expires.*)$")
NEVER_KEYS = frozenset(
    {"requestid", "message", "signature", "secret", "keyid", "help", "helpurl", "label"}
)
ENUM_KEYS = frozenset(
    {
        "status",
        "type",
        "code",
        "decline_code",
        "currency",
        "currencylocal",
        "inputcurrency",
        "method",
        "paymentmethod",
        "environment",
        "keykind",
        "tokentype",
        "channel",
        "tier",
        "reason",
        "failurereason",
        "boundviolated",
        "country",
        "countryiso3",
        "rail",
        "action",
        "kind",
        "resolution",
        "provider",
        "apiversion",
        "param",
    }
)
ENUM_LIST_KEYS = frozenset({"events", "eventsfired", "currencies", "crypto", "methods"})
MONEY_WORDS: tuple[str, ...] = ("amount", "fee", "total", "balance", "available", "pending")
MONEY_WORDS += ("reserve", "frozen", "net", "gross", "platform", "provider", "network", "price")
MONEY_WORDS += ("volume",)
RATE_WORDS = ("rate", "markup")
ZERO_DECIMALS = frozenset({"CLP", "JPY", "KRW", "PYG", "VND", "ISK", "UGX", "XOF", "XAF"})
THREE_DECIMALS = frozenset({"BHD", "KWD", "OMR", "JOD", "TND"})
RATE_DECIMALS = 6
MAX_SHOWN = 60  # characters of a value in a difference


@dataclass(frozen=True, slots=True)
class Difference:
    """One way payorch's answer differs from the upstream's. `seq`: the record's number in the
    recording; `where`: `METHOD /path` of the exchange (or `webhook TYPE`); `field`: a path in
    the answer (`status` for the HTTP status, `fees.total`, `data[0].status`, `(webhook)`);
    `fix`: which side is wrong (`payorch`, or `recording` when the recording cannot be
    replayed faithfully)."""

    seq: int
    where: str
    field: str
    upstream: str
    payorch: str
    fix: str = "payorch"


def shown(value: Any) -> str:
    """A value as a difference shows it: JSON-like, cut to MAX_SHOWN characters."""
    if value is _ABSENT:
        return "(absent)"
    if isinstance(value, str):
        text = repr(value)
    elif value is None:
        text = "null"
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, dict):
        text = "{" + ", ".join(list(value)[:6]) + ("…}" if len(value) > 6 else "}")
    elif isinstance(value, list):
        text = f"[{len(value)} items]"
    else:
        text = str(value)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "…"


class _Absent:
    def __repr__(self) -> str:
        return "(absent)"


_ABSENT = _Absent()


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def decimals_of(currency: Any) -> int:
    if not isinstance(currency, str):
        return 2
    code = currency.upper()
    return 0 if code in ZERO_DECIMALS else 3 if code in THREE_DECIMALS else 2


def _rounded(value: float | int, decimals: int) -> Decimal | None:
    try:
        return Decimal(str(value)).quantize(Decimal(1).scaleb(-decimals), ROUND_HALF_UP)
    except InvalidOperation:
        return None


def _key_kind(key: str) -> str:
    """How a key's value is compared: `ignore`, `enum`, `money`, `rate` or `shape`."""
    lower = key.lower()
    if lower in NEVER_KEYS or ID_KEY.search(key) or TIMESTAMP_KEY.search(key) or "url" in lower:
        return "ignore"
    if lower in ENUM_KEYS:
        return "enum"
    if lower in ENUM_LIST_KEYS:
        return "enumlist"
    if any(word in lower for word in RATE_WORDS):
        return "rate"
    if any(word in lower for word in MONEY_WORDS):
        return "money"
    return "shape"


def _currency_for(key: str, parent: dict[str, Any] | None, inherited: Any) -> Any:
    if parent is None:
        return inherited
    if key == "amountLocal" and "currencyLocal" in parent:
        return parent["currencyLocal"]
    if key == "inputAmount" and "inputCurrency" in parent:
        return parent["inputCurrency"]
    if key.lower().endswith("usd"):
        return "USD"
    return parent.get("currency", inherited)


def compare_values(
    upstream: Any, payorch: Any, path: str = "", key: str = "", currency: Any = None
) -> Iterator[tuple[str, Any, Any]]:
    """(field, upstream value, payorch value) for each difference between two JSON values."""
    kind = _key_kind(key) if key else "shape"
    if json_type(upstream) != json_type(payorch):
        if kind == "ignore" and None in (upstream, payorch):
            return  # a timestamp or id not yet set on one side shows in its own fields
        yield path or "(body)", upstream, payorch
        return
    if isinstance(upstream, dict):
        yield from _compare_objects(upstream, payorch, path, currency)
    elif isinstance(upstream, list):
        if kind == "enumlist" and all(isinstance(item, str) for item in upstream + payorch):
            if upstream != payorch:
                yield path, upstream, payorch
            return
        if len(upstream) != len(payorch):
            yield f"{path}.length", len(upstream), len(payorch)
        for index, (left, right) in enumerate(zip(upstream, payorch, strict=False)):
            yield from compare_values(left, right, f"{path}[{index}]", key, currency)
    elif kind == "ignore":
        return
    elif isinstance(upstream, bool):
        if upstream != payorch:
            yield path, upstream, payorch
    elif isinstance(upstream, int | float) and kind in ("money", "rate", "enum"):
        decimals = RATE_DECIMALS if kind == "rate" else decimals_of(currency)
        if _rounded(upstream, decimals) != _rounded(payorch, decimals):
            yield path, upstream, payorch
    elif kind == "enum" and upstream != payorch:
        yield path, upstream, payorch


def _compare_objects(
    upstream: dict[str, Any], payorch: dict[str, Any], path: str, currency: Any
) -> Iterator[tuple[str, Any, Any]]:
    for key in upstream.keys() | payorch.keys():
        field = f"{path}.{key}" if path else key
        if key not in payorch:
            yield field, upstream[key], _ABSENT
        elif key not in upstream:
            yield field, _ABSENT, payorch[key]
        else:
            inner = _currency_for(key, upstream, currency)
            yield from compare_values(upstream[key], payorch[key], field, key, inner)


def _deliveries_last(body: Any) -> Any:
    """A trace with its `delivery` entries after the others, in their own order. Where an
    attempt falls among the entries is the network's timing, not the service's: an attempt
    sent after the client's next request (a clock move) is stamped after it, and the same
    service answers either order from one run to the next. Every entry is still compared."""
    if (
        not isinstance(body, dict)
        or "subject" not in body
        or not isinstance(body.get("entries"), list)
    ):
        return body
    entries = body["entries"]
    late = [e for e in entries if isinstance(e, dict) and e.get("kind") == "delivery"]
    return {**body, "entries": [e for e in entries if e not in late] + late}


def compare_answers(
    seq: int, where: str, upstream: dict[str, Any], payorch: dict[str, Any], fix: str = "payorch"
) -> list[Difference]:
    """The differences between two recorded responses (format.py's `response` shape: status,
    body, bodyText): the HTTP status first, then the body field by field. Sorted by field so
    that a report reads the same on every run."""
    found: list[Difference] = []
    if upstream.get("status") != payorch.get("status"):
        found.append(
            Difference(seq, where, "status", str(upstream.get("status")), str(payorch["status"]))
        )
    left, right = _deliveries_last(upstream.get("body")), _deliveries_last(payorch.get("body"))
    if upstream.get("truncated"):
        return found  # a body cut in the recording cannot be compared field by field
    if left is None and right is None:
        return found
    for field, a, b in compare_values(left, right):
        found.append(Difference(seq, where, field, shown(a), shown(b), fix))
    found[1 if found and found[0].field == "status" else 0 :] = sorted(
        found[1 if found and found[0].field == "status" else 0 :], key=lambda d: d.field
    )
    return found
