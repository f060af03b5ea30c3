"""Schemathesis hooks for test_schemathesis.py, loaded by its CLI run through SCHEMATHESIS_HOOKS.

Random method ids almost never name a method the shop can charge, so without help hardly any
payment or payout would be created and the stateful phase could not follow the document's links
(create -> get -> refund / simulate). Each hook lets Hypothesis pick either the generated body or
a chargeable one (a sandbox method, a sane amount), keeping the generated free-text fields.
Only for a body that is valid against the document: a negative case (a body made to break the
schema) is sent as generated, or schemathesis would see its repaired stand-in accepted and report
"schema-violating request accepted" (it keeps the case's negative label through the hook).
No tests here: pytest collects nothing from this module.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import schemathesis
import yaml
from hypothesis import strategies as st

DOCUMENT = Path(__file__).resolve().parents[2] / "simulator" / "openapi" / "openapi.yaml"

# Sandbox methods the cascade always accepts, and real ones of the fixture shop.
PAYMENT_METHODS = ("sbx_spei", "sbx_card", "sbx_cash", "1001", "1002")
KEPT_PAYMENT_FIELDS = ("merchantOrderId", "tag1", "tag2", "tag3")
SPEI_RECIPIENT = {
    "name": "Ana López",
    "account": "012180001183597198",
    "documentType": "RFC",
    "documentId": "IXLZ9511197B1",
}


@cache
def _valid(schema_name: str) -> Callable[[Any], bool]:
    """Whether a body is valid against one of the document's schemas (its refs resolved)."""
    components = yaml.safe_load(DOCUMENT.read_text(encoding="utf-8"))["components"]
    schema = {"$ref": f"#/components/schemas/{schema_name}", "components": components}
    return jsonschema.Draft202012Validator(schema).is_valid


def _chargeable(body: Any) -> st.SearchStrategy[Any]:
    kept = {k: v for k, v in body.items() if k in KEPT_PAYMENT_FIELDS}
    charge = st.fixed_dictionaries(
        {
            "amount": st.integers(min_value=1, max_value=500),
            "paymentMethodId": st.sampled_from(PAYMENT_METHODS),
        }
    )
    return charge.map(lambda fields: {**kept, **fields})


@schemathesis.hook.apply_to(operation_id="createPayment").apply_to(operation_id="createTransaction")
def flatmap_body(context: Any, body: Any) -> st.SearchStrategy[Any]:
    if not isinstance(body, dict) or not _valid("PaymentCreate")(body):
        return st.just(body)
    return st.one_of(st.just(body), _chargeable(body))


@schemathesis.hook("flatmap_body").apply_to(operation_id="sendPayout")
def sendable_payout(context: Any, body: Any) -> st.SearchStrategy[Any]:
    if not _valid("PayoutSend")(body):
        return st.just(body)
    # A synthetic SPEI payout needs no funds: it lands in `processing`, ready to simulate.
    payout = st.integers(min_value=100, max_value=5_000).map(
        lambda amount: {"methodId": "sbx_po_mx_spei", "amount": amount, "recipient": SPEI_RECIPIENT}
    )
    return st.one_of(st.just(body), payout)
