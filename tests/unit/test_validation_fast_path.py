"""The fast validity check never accepts what the reference validator refuses.

Request validation asks jsonschema_rs first and only runs python-jsonschema on a refusal, so a
value the fast check accepts is never looked at again. These properties pin that down on every
schema of the document, with values aimed at where two validators disagree: regex edges
(newlines before `$`, control characters, non-ASCII digits), number edges and nesting.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.openapi.validation import compiled

OPERATIONS = list(compiled())
BODIES = [op for op in OPERATIONS if op.body is not None]
PARAMETERS = [(op, p) for op in OPERATIONS for p in op.query]

EDGY_TEXT = st.sampled_from(
    [
        "",
        " ",
        "\n",
        "646180000000000009\n",
        "646180000000000009",
        "TXN-ABC\n",
        "a\x00b",
        "\x7f",
        "١٢٣",  # Arabic-Indic digits: \d in some dialects
        "１２",  # fullwidth digits
        "x" * 300,
        "spei",
        "completed",
        "USD",
        "MEX",
        "https://example.com/x",
        "a@b.co",
        "T+1",
        "T+1\n",
        "req_" + "a" * 24,
        "1001",
    ]
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0, 0.5, 1.0, 1e-9, 10**12, 1.005, 99999999.99]),
    EDGY_TEXT,
    st.text(max_size=12),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def _field_names(schema: Any, found: set[str]) -> set[str]:
    if isinstance(schema, dict):
        found.update(k for k in schema.get("properties", {}) if isinstance(k, str))
        for value in schema.values():
            _field_names(value, found)
    elif isinstance(schema, list):
        for value in schema:
            _field_names(value, found)
    return found


NAMES = sorted(_field_names([op.body.reference.schema for op in BODIES], set()))


@st.composite
def bodies(draw: st.DrawFn) -> tuple[Any, Any]:
    operation = draw(st.sampled_from(BODIES))
    keys = draw(st.lists(st.sampled_from(NAMES), max_size=8, unique=True))
    body = {key: draw(VALUES) for key in keys}
    return operation, body


@settings(max_examples=1500, deadline=None, derandomize=True)
@given(bodies())
@pytest.mark.long(15)
def test_a_body_the_fast_check_accepts_is_one_the_reference_accepts(case: tuple[Any, Any]) -> None:
    operation, body = case
    compiled_body = operation.body
    if compiled_body.accepts(body):
        assert compiled_body.reference.is_valid(body), (operation.operation_id, body)


# Valid bodies with one field swapped for an edge value: the cases where both validators look
# at the same string and only their regex or number rules can tell them apart.
VALID = {
    "createPayment": {
        "amount": 50,
        "paymentMethodId": "1001",
        "userEmail": "a@b.co",
        "userName": "Ana",
        "merchantOrderId": "o-1",
        "currency": "MXN",
        "country": "MEX",
    },
    "createCheckoutSession": {
        "amount": 50,
        "currency": "MXN",
        "country": "MEX",
        "customer": {
            "email": "a@b.co",
            "firstName": "Ana",
            "lastName": "Li",
            "phone": "+525512345678",
        },
    },
    "createWebhook": {"url": "https://example.com/hook", "events": ["payment.completed"]},
    "simulatePayment": {"action": "paid"},
    "refundPayment": {"amount": 5, "reason": "requested"},
}
BY_ID = {op.operation_id: op for op in BODIES}


@st.composite
def near_valid(draw: st.DrawFn) -> tuple[Any, Any]:
    operation_id = draw(st.sampled_from(sorted(VALID)))
    body = dict(VALID[operation_id])
    body[draw(st.sampled_from(sorted(body)))] = draw(st.one_of(EDGY_TEXT, SCALARS))
    return BY_ID[operation_id], body


@settings(max_examples=600, deadline=None, derandomize=True)
@given(near_valid())
def test_near_valid_bodies_get_the_same_verdict_where_the_fast_check_accepts(
    case: tuple[Any, Any],
) -> None:
    operation, body = case
    if operation.body.accepts(body):
        assert operation.body.reference.is_valid(body), (operation.operation_id, body)


def test_the_valid_bodies_are_accepted_by_both() -> None:
    for operation_id, body in VALID.items():
        compiled_body = BY_ID[operation_id].body
        assert compiled_body.accepts(body), operation_id
        assert compiled_body.reference.is_valid(body), operation_id


@settings(max_examples=800, deadline=None, derandomize=True)
@given(st.sampled_from(PARAMETERS), st.one_of(SCALARS, VALUES))
def test_a_query_value_the_fast_check_accepts_is_one_the_reference_accepts(
    parameter: tuple[Any, Any], value: Any
) -> None:
    operation, query = parameter
    if query.validator.accepts(value):
        assert query.validator.reference.is_valid(value), (operation.operation_id, value)


def test_every_schema_is_compiled_for_both_validators() -> None:
    assert BODIES and PARAMETERS
    for operation in BODIES:
        assert callable(operation.body.accepts)
