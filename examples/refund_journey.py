# /// script
# requires-python = ">=3.11"
# dependencies = ["payorch"]
# ///
"""A SPEI pay-in paid, then refunded in part, with the balance before and after and the signed
webhooks it fired. Runs an embedded payorch:

    uv run examples/refund_journey.py
"""

from __future__ import annotations

from payorch_cli.sandbox import sandbox

with sandbox() as box:
    tx = box.client.post("/payments", {"amount": 100, "paymentMethodId": "1001"})
    txn = tx["transactionId"]
    box.client.post(f"/payments/{txn}/simulate", {"action": "paid"})
    box.events.wait_for("payment.completed", timeout=10)
    box.advance("3d")  # past the settlement delay: the money is available
    before = box.client.get("/me/balance")["balance"]["available"]
    refund = box.client.post(f"/payments/{txn}/refund", {"amount": 500, "reason": "other"})
    print(f"{txn}: refund {refund['refundId']} of {refund['amount']} {refund['currency']}")
    after = box.client.get("/me/balance")["balance"]["available"]
    print(f"available balance: {before} -> {after} USD")
    assert refund["status"] == "pending" and after < before, (refund, before, after)
