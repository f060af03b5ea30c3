"""The server's signing (simulator.events.signing) against stripe's verifier, a hand-written HMAC
and the integrators' helper (payorch.webhooks.verify), which must also refuse what is wrong."""

from __future__ import annotations

import hashlib
import hmac

import pytest
import stripe

from payorch.webhooks import SignatureVerificationError, compute_signature, verify
from simulator.events.signing import delivery_headers, sign, signature_header

SECRET = "whsec_test_0123456789abcdefghijklmnopqrstuv"
OLD = "whsec_old_zyxwvutsrqponmlkjihgfedcba9876543210"
BODY = b'{"id":"evt_1","type":"payment.completed","data":{"amount":12.5,"name":"Jos\xc3\xa9"}}'
NOW = 1_780_000_000


def test_sign_matches_a_hand_written_hmac_and_stripe() -> None:
    expected = hmac.new(SECRET.encode(), f"{NOW}.".encode() + BODY, hashlib.sha256).hexdigest()
    assert sign(BODY, SECRET, NOW) == expected == compute_signature(BODY, SECRET, NOW)
    header = signature_header(BODY, NOW, SECRET)
    assert header == f"t={NOW},v1={expected}"
    assert stripe.WebhookSignature.verify_header(BODY.decode(), header, SECRET, tolerance=None)


def test_rotation_header_carries_v0_with_the_previous_secret() -> None:
    header = signature_header(BODY, NOW, SECRET, OLD)
    parts = dict(p.split("=", 1) for p in header.split(","))
    assert parts == {"t": str(NOW), "v1": sign(BODY, SECRET, NOW), "v0": sign(BODY, OLD, NOW)}
    assert stripe.WebhookSignature.verify_header(BODY.decode(), header, SECRET, tolerance=None)
    with pytest.raises(stripe.SignatureVerificationError):
        stripe.WebhookSignature.verify_header(BODY.decode(), header, OLD, tolerance=None)


def test_delivery_headers() -> None:
    headers = delivery_headers(
        BODY, event_type="payment.completed", delivery_id="dlv_1", timestamp=NOW, secret=SECRET
    )
    assert headers["X-Service-Event"] == "payment.completed"
    assert headers["X-Service-Delivery"] == "dlv_1"
    assert headers["X-Service-Signature"] == signature_header(BODY, NOW, SECRET)
    assert headers["Content-Type"] == "application/json"


# -- payorch.webhooks.verify ---------------------------------------------------------------------


def test_verify_accepts_and_returns_the_event() -> None:
    event = verify(BODY, signature_header(BODY, NOW, SECRET), SECRET, now=NOW + 299)
    assert event["id"] == "evt_1"
    assert verify(BODY.decode(), signature_header(BODY, NOW, SECRET), SECRET, now=NOW - 300)


def test_verify_accepts_v0_with_the_previous_secret_unless_strict() -> None:
    header = signature_header(BODY, NOW, SECRET, OLD)
    assert verify(BODY, header, OLD, now=NOW)
    assert verify(BODY, header, SECRET, now=NOW, schemes=("v1",))
    with pytest.raises(SignatureVerificationError):
        verify(BODY, header, OLD, now=NOW, schemes=("v1",))


@pytest.mark.parametrize(
    ("body", "header", "secret", "now", "reason"),
    [
        (BODY + b" ", signature_header(BODY, NOW, SECRET), SECRET, NOW, "signature_mismatch"),
        (BODY, signature_header(BODY, NOW, OLD), SECRET, NOW, "signature_mismatch"),
        (
            BODY,
            signature_header(BODY, NOW, SECRET),
            SECRET,
            NOW + 301,
            "timestamp_out_of_tolerance",
        ),
        (
            BODY,
            signature_header(BODY, NOW, SECRET),
            SECRET,
            NOW - 301,
            "timestamp_out_of_tolerance",
        ),
        (BODY, "", SECRET, NOW, "missing_header"),
        (BODY, None, SECRET, NOW, "missing_header"),
        (BODY, f"v1={sign(BODY, SECRET, NOW)}", SECRET, NOW, "malformed_header"),
        (BODY, f"t=abc,v1={sign(BODY, SECRET, NOW)}", SECRET, NOW, "malformed_header"),
        (BODY, f"t={NOW},t={NOW},v1={sign(BODY, SECRET, NOW)}", SECRET, NOW, "malformed_header"),
        (BODY, f"t={NOW}", SECRET, NOW, "no_signature"),
        (BODY, f"t={NOW},v1=", SECRET, NOW, "signature_mismatch"),
        (BODY, f"t={NOW},v1={sign(BODY, SECRET, NOW)[:32]}", SECRET, NOW, "signature_mismatch"),
        (BODY, f"t={NOW},v2={sign(BODY, SECRET, NOW)}", SECRET, NOW, "no_signature"),
        (BODY, f"t={NOW},v1=é{sign(BODY, SECRET, NOW)}", SECRET, NOW, "signature_mismatch"),
        (b"[1]", signature_header(b"[1]", NOW, SECRET), SECRET, NOW, "invalid_payload"),
        (b"nope", signature_header(b"nope", NOW, SECRET), SECRET, NOW, "invalid_payload"),
    ],
)
def test_verify_refuses(
    body: bytes, header: str | None, secret: str, now: int, reason: str
) -> None:
    with pytest.raises(SignatureVerificationError) as info:
        verify(body, header, secret, now=now)
    assert info.value.reason == reason and str(info.value)


def test_verify_uses_the_wall_clock_by_default() -> None:
    with pytest.raises(SignatureVerificationError, match="old"):
        verify(BODY, signature_header(BODY, NOW, SECRET), SECRET)
