# /// script
# requires-python = ">=3.11"
# dependencies = ["payorch"]
# ///
"""A PIX pay-in that nobody pays: created, its QR code shown, then the clock jumps past its due
date and the payment expires with a `payment.failed` event. Runs an embedded payorch:

    uv run examples/pix_payment_expires.py
"""

from __future__ import annotations

from payorch_cli.sandbox import sandbox

with sandbox() as box:
    tx = box.client.post(
        "/payments",
        {"amount": 25, "paymentMethodId": "1006", "documentId": "12345678909"},
    )
    print(f"{tx['transactionId']}: {tx['status']}, pay by {tx['paymentData']['dueDate']}")
    print(f"PIX copia e cola: {tx['paymentData']['qrCode'][:40]}...")
    box.advance("2d")
    event = box.events.wait_for("payment.failed", timeout=10)
    after = box.client.get(f"/payments/{tx['transactionId']}")
    print(f"after two days: {after['status']} ({event['type']} delivered)")
    assert after["status"] == "expired", after
