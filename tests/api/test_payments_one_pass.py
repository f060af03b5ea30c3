"""POST /payments makes one pass over its body and enters its handler once (issue 27).

The OpenAPI validation hands the handler the typed request its domain receives (no second shape
check), and the Idempotency-Key wraps the payment's operation without calling back into the
handler's module.
"""

from __future__ import annotations

import sys
from collections import Counter
from types import FrameType
from typing import Any

import pytest

from simulator.domain.payins import request as payment_request
from simulator.domain.payins.request import PaymentRequest
from simulator.http.handlers import payments as payment_handlers
from simulator.openapi.validation import compiled
from tests.conftest import Api, Keys, assert_error

KEYS = Keys()
BODY = {"amount": 50, "paymentMethodId": " 1001 ", "userEmail": "b@example.com"}


def test_the_validation_hands_payments_a_typed_request_and_others_their_dict() -> None:
    operations = compiled()
    for route in ("/api/v1/payments", "/api/v1/transactions"):
        create = operations.find("POST", route)
        assert create is not None
        typed = create.check_body(dict(BODY), "http://x")
        assert isinstance(typed, PaymentRequest)
        assert typed.payment_method_id == "1001"  # trimmed, as the domain reads it
        assert typed.body == BODY  # as sent: the Idempotency-Key's identity
    refund = operations.find("POST", "/api/v1/payments/{id}/refund")
    assert refund is not None
    assert refund.check_body({"amount": 1}, "http://x") == {"amount": 1}


def test_a_checked_body_is_not_checked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shape checks of parse_payment_request (for bodies no schema checked) are not run on a
    body the validation accepted."""

    def refuse(body: dict[str, Any]) -> PaymentRequest:
        raise AssertionError("shape checked twice")

    monkeypatch.setattr(payment_request, "parse_payment_request", refuse)
    create = compiled().find("POST", "/api/v1/payments")
    assert create is not None
    assert isinstance(create.check_body(dict(BODY), "http://x"), PaymentRequest)


async def _calls_into_handler_module(api: Api, **kw: Any) -> tuple[int, Counter[str]]:
    calls: Counter[str] = Counter()
    module = payment_handlers.__file__

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "call" and frame.f_code.co_filename == module:
            calls[frame.f_code.co_name] += 1

    sys.setprofile(profile)
    try:
        status, _, _ = await api.post("/payments", KEYS.sandbox_sk, json=BODY, **kw)
    finally:
        sys.setprofile(None)
    return status, calls


@pytest.mark.parametrize("key", [None, "one-pass-key"])
async def test_the_handler_is_entered_once_with_or_without_a_key(api: Api, key: str | None) -> None:
    headers = {"Idempotency-Key": key} if key else None
    status, calls = await _calls_into_handler_module(api, headers=headers)
    assert status == 200
    # The coroutine is resumed at each await, which the profiler reports as a call too; no
    # other function of the module runs (the operation lives in http/payment_creation.py).
    assert set(calls) == {"create_payment"}


async def test_rules_past_the_shape_keep_their_order_after_the_idempotency_key(api: Api) -> None:
    """userIp is checked where the parser checked it: after the Idempotency-Key's own checks."""
    body = {**BODY, "userIp": "not-an-ip"}
    status, data, _ = await api.post(
        "/payments", KEYS.sandbox_sk, json=body, headers={"Idempotency-Key": "k" * 256}
    )
    assert_error(status, data, 400, "invalid_request")
    assert data["error"]["param"] == "Idempotency-Key"
    status, data, _ = await api.post("/payments", KEYS.sandbox_sk, json=body)
    error = assert_error(status, data, 400, "invalid_request")
    assert error["param"] == "userIp"
    assert error["details"]["issues"] == [
        {"path": "userIp", "message": "not an IPv4 or IPv6 address"}
    ]


@pytest.mark.parametrize(
    "raw",
    [
        b'{"amount":50,"paymentMethodId":"1001","amount":60}',
        b'{"amount" :50,"paymentMethodId":"1001","amount":60}',  # a key's colon apart from it
        b'{"amount":50,"paymentMethodId":"1001","tag1":"a\\":","amount":60}',  # a value's '":'
        b'{"amount":50,"paymentMethodId":"1001","customer":{"email":"a@b.co","email":"c@d.co"}}',
    ],
)
async def test_a_repeated_key_is_refused_whichever_count_decides(api: Api, raw: bytes) -> None:
    status, data, _ = await api.post(
        "/payments", KEYS.sandbox_sk, data=raw, headers={"Content-Type": "application/json"}
    )
    assert_error(status, data, 400, "invalid_json")


async def test_a_value_holding_a_key_like_text_is_not_a_repeated_key(api: Api) -> None:
    raw = b'{"amount":50,"paymentMethodId":"1001","tag1":"x\\":","tag2":":y"}'
    status, data, _ = await api.post(
        "/payments", KEYS.sandbox_sk, data=raw, headers={"Content-Type": "application/json"}
    )
    assert status == 200, data
    assert (data["tag1"], data["tag2"]) == ('x":', ":y")


@pytest.mark.parametrize(("size", "status"), [(200, 200), (201, 413)])
async def test_a_body_read_whole_with_its_head_keeps_the_size_limit(
    aiohttp_client: Any, settings: Any, size: int, status: int
) -> None:
    """A body that arrived with the head is taken without awaiting the stream: the limit is the
    one aiohttp's own read applies (more than `body_limit` bytes is 413)."""
    from dataclasses import replace

    from simulator.app import create_app

    client = await aiohttp_client(create_app(replace(settings, body_limit=200)))
    head = b'{"amount":50,"paymentMethodId":"1001","tag1":"'
    raw = head + b"x" * (size - len(head) - 2) + b'"}'
    assert len(raw) == size
    answer = await client.post(
        "/api/v1/payments",
        data=raw,
        headers={"Authorization": f"Bearer {KEYS.sandbox_sk}", "Content-Type": "application/json"},
    )
    data = await answer.json()
    assert answer.status == status, data
    if status == 413:
        assert data["error"]["code"] == "payload_too_large"
        assert data["error"]["details"] == {"limitBytes": 200}
