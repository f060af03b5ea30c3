"""What `payorch record` keeps of a logged value, and what it leaves out: the stable fields a
replay must reproduce, the server-made ids, the masked secrets' stand-ins, and what a step may
hold."""

from __future__ import annotations

import re
from typing import Any

from payorch.bounded import MAX_DEPTH

MASK = "****"
ADVANCE_PATH = "/_sim/clock/advance"
BALANCE_PATH = "/me/balance"
# What a step's body may hold: the scenario loader refuses YAML nested deeper than MAX_DEPTH
# (a body starts 4 levels down: steps, the step, request, body), and a file above 2 MiB.
MAX_BODY_DEPTH = MAX_DEPTH - 8
MAX_BODY_VALUES = 20_000
MAX_BODY_TEXT = 256 * 1024
# The amounts of a balance read that add up over the server's life: checked as changes.
CUMULATIVE = ("balance", "feeSummary")
# A path segment that looks made by a server: an upper-case prefix, a dash and an upper-case
# random tail (TXN-…, CLM-…: a tail of letters only is drawn one time in a few hundred), a
# short prefix and a random tail with a digit (po_…, inc_…), or a long number (a CLABE);
# fixture ids (sbx_pix, prv_orbita_cards, mer_mercadoazul) are lower case with no digit.
MADE_ID = re.compile(
    r"^(?:[A-Z]{2,5}-[0-9A-Z]{8,}|[A-Za-z]{2,5}[-_](?=[A-Za-z0-9]*\d)[A-Za-z0-9]{8,}|\d{10,})$"
)

# A key of a response naming a server-made value.
ID_KEY = re.compile(r"^(id|token|clabe)$|(Id|Token|_id|_token)$")
# A key of a stable field (case-insensitive substring).
STABLE_WORDS = (
    "status",
    "amount",
    "currency",
    "type",
    "kind",
    "fee",
    "total",
    "balance",
    "available",
    "pending",
    "reserve",
    "frozen",
    "resolution",
    "reason",
    "environment",
    "action",
    "events",
    "created",
    "refunded",
    "net",
    "gross",
    "active",
    "method",
)
# Values a server draws anew on every run (a bank transfer's `reference` to quote).
VOLATILE_KEYS = ("requestid", "secret", "signature", "reference")
TIMESTAMP_KEY = re.compile(r"(At|_at|Date|date|timestamps?|now|expires.*)$")
IDENTIFIER_PART = re.compile(r"[^A-Za-z0-9_]")
NAME_BY_PREFIX = (
    ("TXN-", "tx"),
    ("CLM-", "claim"),
    ("WDR-", "withdrawal"),
    ("po_", "payout"),
    ("evt_", "event"),
)
# A valid test buyer document per country (ISO 3166 alpha-3) for a masked `documentId`.
TEST_DOCUMENTS = {
    "MEX": "XAXX010101000",  # the SAT's generic RFC
    "BRA": "52998224725",  # a CPF with valid check digits
    "CHL": "111111111",
    "ARG": "30123456",
    "COL": "1234567890",
    "PER": "12345678",
    "USA": "123456789",
}
TEST_CARD = "4242424242424242"
# Stand-ins for a buyer's or recipient's masked personal data (keys lowered, `_` dropped): not
# secrets the user must supply, so a recorded journey replays as it is (docs/decisions.md).
TEST_PERSONAL = {
    "username": "Test Buyer",
    "fullname": "Test Buyer",
    "name": "Test Buyer",
    "firstname": "Test",
    "lastname": "Buyer",
    "useremail": "buyer@example.com",
    "email": "buyer@example.com",
    "userphone": "+525550001234",
    "phone": "+525550001234",
    "userip": "203.0.113.10",  # TEST-NET-3: a documentation address
    "customerip": "203.0.113.10",
}
COUNTRY_BY_CURRENCY = {"MXN": "MEX", "BRL": "BRA", "CLP": "CHL", "ARS": "ARG", "COP": "COL"}


def change_from(base: str, value: Any, recorded_base: Any) -> Any:
    """A cumulative amount as `${base + change}` (a number of any value where it is the base
    itself, or where the first read had no such amount)."""
    numbers = (int, float)
    if not isinstance(value, numbers) or isinstance(value, bool):
        return value
    if not isinstance(recorded_base, numbers) or isinstance(recorded_base, bool):
        return {"$type": "number"}
    from decimal import Decimal

    change = Decimal(str(value)) - Decimal(str(recorded_base))
    if change == 0:
        return "${" + base + "}"
    sign = "+" if change > 0 else "-"
    return "${" + f"{base} {sign} {abs(change)}" + "}"


def unexpressible(detail: dict[str, Any]) -> str | None:
    """Why a logged request cannot be a step of a scenario file, or None."""
    for side in ("request", "response"):
        body = (detail.get(side) or {}).get("body") or {}
        if not isinstance(body, dict):
            return f"its {side} record is not an object"
        if side == "request" and body.get("truncated"):
            # The log keeps the first 64 KB: a replay would send a cut body.
            return f"its request body ({body.get('bytes')} bytes) was cut short in the log"
        text = body.get("text")
        if isinstance(text, str) and len(text) > MAX_BODY_TEXT:
            return f"its {side} body is {len(text):,} characters (at most {MAX_BODY_TEXT:,})"
        problem = too_big(body.get("body"))
        if problem is not None:
            return f"its {side} body is {problem}"
    return None


def too_big(value: Any) -> str | None:
    """Whether a JSON value is nested or sized past what a step may hold (iterative: the value
    may be nested a thousand deep)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    count = 0
    while stack:
        item, depth = stack.pop()
        count += 1
        if depth > MAX_BODY_DEPTH:
            return f"nested deeper than {MAX_BODY_DEPTH} levels"
        if count > MAX_BODY_VALUES:
            return f"more than {MAX_BODY_VALUES:,} values"
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return None


def is_stable_key(key: str) -> bool:
    lowered = key.lower()
    return any(word in lowered for word in STABLE_WORDS)


def is_volatile(key: str, value: Any) -> bool:
    if ID_KEY.search(key) or TIMESTAMP_KEY.search(key):
        return True
    lowered = key.lower()
    if "url" in lowered or "path" in lowered or lowered in VOLATILE_KEYS:
        return True
    return isinstance(value, str) and (
        value.startswith(("http://", "https://", MASK))
        or re.match(r"\d{4}-\d\d-\d\dT", value) is not None
    )
