"""The recording format shared by `payorch proxy` (which writes it) and `payorch drift` (which
reads it): what real traffic looked like, redacted, one JSON document per line (design.md 1.9).

A recording is a UTF-8 file of JSON lines, appended as traffic happens, so that 10,000 exchanges
never sit in memory and a proxy killed mid-way leaves every whole line readable:

1. The first line is the header::

     {"format": "payorch-recording", "version": 1, "upstream": "https://sandbox.example",
      "startedAt": "2026-11-28T15:00:00.000Z", "bodyLimit": 1048576, "generator": "payorch 0.1.0"}

2. Then, in the order they happened, one line per record, each with a `kind`:

   - `exchange`: one API request and its answer::

       {"kind": "exchange", "seq": 1, "at": "<ISO-8601 wall time the request arrived>",
        "durationMs": 12.5,
        "request": {"method": "POST", "path": "/api/v1/payments", "query": "",
                    "headers": {"content-type": "application/json", ...},
                    "body": <JSON value or null>, "bodyText": <str or null>,
                    "bodyBytes": 57, "truncated": false},
        "response": {"status": 201, "headers": {...}, "body": ..., "bodyText": ...,
                     "bodyBytes": 812, "truncated": false} or null,
        "comparable": true,
        "error": null or {"code": "upstream_unreachable" | "upstream_timeout", "message": "..."}}

     Header names are lower case. `body` holds the parsed JSON when the body was JSON (and not
     truncated); otherwise `bodyText` holds the text (or null when empty). A body past the
     header's `bodyLimit` bytes is passed through whole but recorded cut: `truncated` true,
     `body` null, `bodyText` the first `bodyLimit` bytes decoded with replacement. An exchange
     whose upstream could not be reached or did not answer in time has `response` null (the
     client got 502/504), `comparable` false and `error` set; drift never compares it.

   - `webhook`: a delivery the upstream sent to the proxy's receiver::

       {"kind": "webhook", "seq": 7, "at": "...", "headers": {...}, "body": <JSON>,
        "bodyText": null, "eventType": "payment.completed" or null,
        "signature": "valid" | "invalid" | "unchecked",
        "forwarded": null or {"status": 200 or null, "error": null or "..."}}

     `signature` is `unchecked` when no `--webhook-secret` was given.

   - `end`: written when the proxy stops cleanly (or on `--flush`, followed by more records)::

       {"kind": "end", "exchanges": 12, "webhooks": 3, "endedAt": "..."}

   `seq` counts exchanges and webhooks together, from 1, in arrival order.

Redaction happens before a line is written (never after): credentials become placeholders that
keep their kind (`sk_test_REDACTED_1`, `pk_live_REDACTED_2`, access and refresh tokens
`tok_REDACTED_3` / `rt_REDACTED_4`), so a replay knows which of its own credentials stands for
each; personal data becomes synthetic values of the same shape (a valid CPF for a CPF, an address
at example.com for an email, a test card number for a card), the same input always the same
placeholder within one recording; signature headers become `REDACTED`.

A reader refuses, with one line: a file whose first line is not this header (not a recording), a
`version` above `VERSION` (from a newer payorch), and a line that is not whole JSON (cut mid-line).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final, Literal, TypedDict

FORMAT: Final = "payorch-recording"
VERSION: Final = 1
DEFAULT_BODY_LIMIT: Final = 1024 * 1024  # bytes of a body kept in a recording

# File names inside `payorch proxy --out DIR`.
EXCHANGES_FILE: Final = "exchanges.jsonl"
SCENARIO_FILE: Final = "scenario.yaml"


def instant(at: Any) -> float | None:
    """A record's `at` as seconds since the epoch; None when it is not an ISO-8601 time."""
    if not isinstance(at, str):
        return None
    try:
        return datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


# Codes (of the error catalogue) an exchange that got no answer from the upstream carries.
UPSTREAM_UNREACHABLE: Final = "upstream_unreachable"
UPSTREAM_TIMEOUT: Final = "upstream_timeout"

SignatureCheck = Literal["valid", "invalid", "unchecked"]


class Header(TypedDict):
    format: str
    version: int
    upstream: str
    startedAt: str
    bodyLimit: int
    generator: str


class Message(TypedDict):
    """A request or a response as recorded (see the module's text for the body fields)."""

    headers: dict[str, str]
    body: Any
    bodyText: str | None
    bodyBytes: int
    truncated: bool


class Request(Message):
    method: str
    path: str
    query: str


class Response(Message):
    status: int


class ExchangeError(TypedDict):
    code: str
    message: str


class Exchange(TypedDict):
    kind: Literal["exchange"]
    seq: int
    at: str
    durationMs: float
    request: Request
    response: Response | None
    comparable: bool
    error: ExchangeError | None


class Forwarded(TypedDict):
    status: int | None
    error: str | None


class Webhook(TypedDict):
    kind: Literal["webhook"]
    seq: int
    at: str
    headers: dict[str, str]
    body: Any
    bodyText: str | None
    eventType: str | None
    signature: SignatureCheck
    forwarded: Forwarded | None


class End(TypedDict):
    kind: Literal["end"]
    exchanges: int
    webhooks: int
    endedAt: str
