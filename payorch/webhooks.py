"""Verify webhook deliveries: `verify(raw_body, signature_header, secret)`.

Standard library only (no aiohttp, no simulator), so it can be copied into any service::

    from payorch.webhooks import SignatureVerificationError, verify

    def handle(request):                      # any framework: you need the RAW body bytes
        try:
            event = verify(request.body, request.headers.get("X-Service-Signature"), SECRET)
        except SignatureVerificationError as exc:
            return 400, str(exc)
        if already_processed(request.headers["X-Service-Delivery"]):
            return 200, "duplicate"           # a retry of something you handled: ack, skip
        process(event)
        return 200, "ok"

What it checks (the spec's "Events" section):

- the header has a `t=<unix seconds>` and at least one signature;
- `HMAC-SHA256(secret, "<t>.<raw body>")` (hex; the key is the whole `whsec_...` string) equals
  one of the signatures, compared in constant time;
- `t` is within `tolerance` seconds of now, in either direction: an old `t` is a replay, a `t`
  from the future is a forgery or a badly skewed clock.

Why `v0` is accepted too: during a secret rotation each delivery carries `v1` (new secret) and
`v0` (previous secret) for the 24-hour grace. An endpoint still configured with the previous
secret verifies through `v0`, so rotating never breaks a receiver mid-deploy; once the grace ends
the service stops sending `v0`, and a receiver that still holds only the old secret fails, as it
should. Accepting `v0` costs nothing: it is checked with the secret YOU pass, exactly like `v1`,
so a signature made with any other key still fails. To be strict, pass `schemes=("v1",)`.

Duplicates: delivery is at least once. Every attempt (retry or replay) is signed afresh with a new
`t`, so the same `X-Service-Delivery` with a new `t` is a retry (acknowledge with 2xx, do not
process twice), and the same id with the same `t` and signature is a captured request played
again (reject it).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any

DEFAULT_TOLERANCE = 300
SIGNATURE_HEADER = "X-Service-Signature"
DELIVERY_HEADER = "X-Service-Delivery"
EVENT_HEADER = "X-Service-Event"

__all__ = [
    "DEFAULT_TOLERANCE",
    "DELIVERY_HEADER",
    "EVENT_HEADER",
    "SIGNATURE_HEADER",
    "SignatureVerificationError",
    "compute_signature",
    "verify",
]


class SignatureVerificationError(ValueError):
    """The delivery must be rejected (answer 400 or 401). `reason` is a stable short code:
    `missing_header`, `malformed_header`, `no_signature`, `signature_mismatch`,
    `timestamp_out_of_tolerance`, `invalid_payload`."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def compute_signature(payload: bytes, secret: str, timestamp: int) -> str:
    """The hex HMAC-SHA256 of `<timestamp>.<payload>` keyed by the whole secret string."""
    message = str(timestamp).encode() + b"." + payload
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def _parse(header: str) -> tuple[int, dict[str, list[str]]]:
    timestamp: int | None = None
    signatures: dict[str, list[str]] = {}
    for item in header.split(","):
        key, sep, value = item.strip().partition("=")
        if not sep:
            continue
        if key == "t":
            if timestamp is not None or not value.isdigit():
                raise SignatureVerificationError(
                    "The signature header needs exactly one numeric t=<unix seconds>.",
                    "malformed_header",
                )
            timestamp = int(value)
        else:
            signatures.setdefault(key, []).append(value)
    if timestamp is None:
        raise SignatureVerificationError(
            "The signature header has no t=<unix seconds>.", "malformed_header"
        )
    return timestamp, signatures


def verify(
    payload: bytes | str,
    header: str | None,
    secret: str,
    tolerance: int = DEFAULT_TOLERANCE,
    now: float | None = None,
    *,
    schemes: tuple[str, ...] = ("v1", "v0"),
) -> dict[str, Any]:
    """Check a delivery and return its event envelope; raise SignatureVerificationError if not.

    `payload` must be the raw body exactly as received (re-serialised JSON will not match).
    `now` defaults to the current time (seconds since the epoch).
    """
    raw = payload.encode("utf-8") if isinstance(payload, str) else bytes(payload)
    if not header:
        raise SignatureVerificationError(
            f"No {SIGNATURE_HEADER} header: the delivery is unsigned.", "missing_header"
        )
    timestamp, signatures = _parse(header)
    candidates = [sig for scheme in schemes for sig in signatures.get(scheme, ())]
    if not candidates:
        raise SignatureVerificationError(
            f"The signature header carries no {' or '.join(schemes)} signature.", "no_signature"
        )
    expected = compute_signature(raw, secret, timestamp).encode()
    # Check every candidate (no early exit) and compare in constant time.
    matched = False
    for candidate in candidates:
        matched |= hmac.compare_digest(expected, candidate.encode("utf-8", "replace"))
    if not matched:
        raise SignatureVerificationError(
            "No signature matches: wrong secret, or the body was changed after signing "
            "(verify the raw bytes, not re-serialised JSON).",
            "signature_mismatch",
        )
    current = time.time() if now is None else now
    skew = current - timestamp
    if abs(skew) > tolerance:
        where = "old" if skew > 0 else "in the future"
        raise SignatureVerificationError(
            f"The signature timestamp is {abs(skew):.0f} s {where}; the tolerance is "
            f"{tolerance} s (replayed delivery, or a skewed clock).",
            "timestamp_out_of_tolerance",
        )
    try:
        event = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: nested too deeply
        raise SignatureVerificationError("The payload is not JSON.", "invalid_payload") from None
    if not isinstance(event, dict):
        raise SignatureVerificationError("The payload is not a JSON object.", "invalid_payload")
    return event
