"""Webhook signatures (pure): HMAC-SHA256 over `<t>.<raw body>`, keyed by the whole secret.

The header is `t=<unix seconds>,v1=<hex>`; during a secret rotation it also carries
`,v0=<hex>`, the same HMAC keyed by the previous secret, so an endpoint that has not switched to
the new secret yet keeps verifying until the grace ends. `t` is real wall-clock time (design.md
2.1): the receiver compares it with its own clock. The integrator-side check lives in
`payorch.webhooks.verify`, written independently so that each tests the other.
"""

from __future__ import annotations

import hashlib
import hmac

SIGNATURE_HEADER = "X-Service-Signature"
EVENT_HEADER = "X-Service-Event"
DELIVERY_HEADER = "X-Service-Delivery"
NAMESPACE_HEADER = "X-Service-Namespace"  # the namespace a delivery comes from (not `default`)


def sign(body: bytes, secret: str, timestamp: int) -> str:
    """Hex HMAC-SHA256 of `<timestamp>.<body>` with the whole `whsec_...` string as the key."""
    message = str(timestamp).encode() + b"." + body
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def signature_header(
    body: bytes, timestamp: int, secret: str, previous_secret: str | None = None
) -> str:
    header = f"t={timestamp},v1={sign(body, secret, timestamp)}"
    if previous_secret is not None:
        header += f",v0={sign(body, previous_secret, timestamp)}"
    return header


def delivery_headers(
    body: bytes,
    *,
    event_type: str,
    delivery_id: str,
    timestamp: int,
    secret: str,
    previous_secret: str | None = None,
) -> dict[str, str]:
    """Every header of one delivery attempt (build + sign; no I/O)."""
    return {
        "Content-Type": "application/json",
        "User-Agent": "payorch-webhooks/1",
        SIGNATURE_HEADER: signature_header(body, timestamp, secret, previous_secret),
        EVENT_HEADER: event_type,
        DELIVERY_HEADER: delivery_id,
    }
