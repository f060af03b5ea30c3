"""Hostile input: whatever a client sends, a clear 4xx in the envelope and no state changed.

Malformed JSON, non-object bodies, NaN/Infinity/1e400 and non-UTF-8 bytes are in
test_envelope.py (which also checks the store is untouched); this module adds duplicate keys,
swapped types, 10,000-deep nesting, compressed bodies (a gzip bomb), control characters and 10 kB
strings in every text field of every JSON body the document describes, and header injection
attempts through URLs, names and paths.
"""

from __future__ import annotations

import gzip
import json
import time
import zlib
from typing import Any

import pytest

from simulator.openapi.document import document
from tests.api.test_envelope import check_envelope, store_snapshot
from tests.conftest import KEYS, Api, assert_error

JSON = {"Content-Type": "application/json"}
DOC = document()
SCHEMAS = DOC["components"]["schemas"]
PAYMENT = {"amount": 50, "paymentMethodId": "1001"}
CUSTOMER = {"firstName": "Ana", "lastName": "Souza", "email": "ana@example.com", "phone": "+5511"}
SPEI_RECIPIENT = {
    "name": "Ana López",
    "account": "012180001183597198",
    "documentType": "RFC",
    "documentId": "IXLZ9511197B1",
}

# Every JSON body of the API: (method, path, a body valid but for the field under test, schema).
BODIES: list[tuple[str, str, dict[str, Any], str]] = [
    ("POST", "/auth/token", {"apiKey": KEYS.sandbox_pk, "secretKey": KEYS.sandbox_sk},
     "TokenRequest"),
    ("POST", "/auth/refresh", {"refreshToken": "rt_unknown"}, "RefreshRequest"),
    ("POST", "/payments", PAYMENT, "PaymentCreate"),
    ("POST", "/transactions", PAYMENT, "PaymentCreate"),
    ("POST", "/payments/TXN-NOPE/refund", {"reason": "duplicate"}, "RefundRequest"),
    ("POST", "/checkout/sessions", {"amount": 50, "customer": CUSTOMER},
     "SelectorSessionCreate"),
    ("POST", "/checkout/sessions", {**PAYMENT, "userName": "Ana Souza"}, "OneShotSessionCreate"),
    ("POST", "/checkout/sessions/cs_nope/select", {"paymentMethodId": "1001"}, "SelectRequest"),
    ("POST", "/me/deposit-accounts", {"endUserRef": "u-1", "name": "Ana López",
     "email": "ana@example.com", "phone": "+5215512345678", "depositMethodId": "dm_spei_stp"},
     "DepositAccountCreate"),
    ("POST", "/me/payout/fund-sandbox", {"currency": "MXN", "amount": 10}, "FundRequest"),
    ("POST", "/me/payout/transfer", {"amount": 1}, "TransferRequest"),
    ("POST", "/me/payout/swap", {"from": "USD", "to": "MXN", "amount": 1}, "SwapRequest"),
    ("POST", "/me/payout/send", {"methodId": "sbx_po_mx_spei", "amount": 500,
     "recipient": SPEI_RECIPIENT}, "PayoutSend"),
    ("POST", "/webhooks", {"events": ["*"]}, "WebhookCreate"),
    ("PATCH", "/webhooks/wh_nope", {"active": True}, "WebhookUpdate"),
    ("POST", "/_sim/deposits", {"clabe": "646180000000000009", "amount": 10},
     "SimDepositRequest"),
    ("POST", "/_sim/withdrawals", {"amount": 10}, "WithdrawalRequest"),
    ("POST", "/_sim/state", {"name": "hostile"}, "SaveStateRequest"),
    ("PATCH", "/_sim/providers/prv_stp_mx", {"behaviour": "outage"}, "SimProviderUpdate"),
    ("POST", "/_sim/providers/prv_stp_mx/incidents", {"behaviour": "outage",
     "durationSeconds": 60}, "SimIncidentRequest"),
    ("POST", "/_sim/webhooks/wh_nope/secret", {"secret": "whsec_" + "k" * 40},
     "SimWebhookSecretRequest"),
]  # fmt: skip

CONTROL_VALUES = [
    "Ana\x00Souza",
    "x\r\nSet-Cookie: session=stolen",  # header injection
    "bell\x07",
    "esc\x1b[31mred",
    "del\x7f",
]
TEN_KB = "x" * 10_000


async def send(
    api: Api, method: str, path: str, body: Any, key: str | None = KEYS.sandbox_sk
) -> tuple[int, Any, Any]:
    """Like `Api.call`, but `/checkout/sessions...` is the API's, not the buyer's pages."""
    url = path if path.startswith("/_sim") else f"/api/v1{path}"
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    response = await api.client.request(method, url, json=body, headers=headers)
    text = await response.text()
    try:
        out = json.loads(text) if text else None
    except ValueError:
        out = text
    return response.status, out, response


def resolved(schema: dict[str, Any]) -> dict[str, Any]:
    schema = dict(schema)
    while "$ref" in schema:
        target = SCHEMAS[schema.pop("$ref").rsplit("/", 1)[-1]]
        schema = {**target, **schema}
    return schema


def text_fields(schema: dict[str, Any], prefix: str = "") -> list[str]:
    """Paths of every free-text property (strings, or values with a length bound)."""
    fields = []
    for name, member in schema.get("properties", {}).items():
        member = resolved(member)
        kinds = member.get("type", [])
        kinds = kinds if isinstance(kinds, list) else [kinds]
        if "object" in kinds and "properties" in member:
            fields += text_fields(member, f"{prefix}{name}.")
        elif "string" in kinds or ("maxLength" in member and not kinds):
            fields.append(prefix + name)
    return fields


def with_value(body: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    head, _, rest = path.partition(".")
    if not rest:
        return {**body, head: value}
    return {**body, head: with_value(body.get(head) or {}, rest, value)}


def test_every_json_body_of_the_document_is_covered() -> None:
    described = {
        (method.upper(), path)
        for path, item in DOC["paths"].items()
        for method, operation in item.items()
        if isinstance(operation, dict) and "requestBody" in operation
    }
    advance_has_no_text = ("POST", "/_sim/clock/advance")
    namespace_has_no_text = ("PUT", "/_sim/namespaces/{name}")  # {idleSeconds} only
    simulations = {("POST", "/payments/{id}/simulate"), ("POST", "/me/payout/send/{id}/simulate")}
    templated = {
        ("POST", "/payments/TXN-NOPE/refund"): ("POST", "/payments/{id}/refund"),
        ("POST", "/checkout/sessions/cs_nope/select"): (
            "POST",
            "/checkout/sessions/{token}/select",
        ),
        ("PATCH", "/webhooks/wh_nope"): ("PATCH", "/webhooks/{id}"),
        ("PATCH", "/_sim/providers/prv_stp_mx"): ("PATCH", "/_sim/providers/{id}"),
        ("POST", "/_sim/providers/prv_stp_mx/incidents"): (
            "POST",
            "/_sim/providers/{id}/incidents",
        ),
        ("POST", "/_sim/webhooks/wh_nope/secret"): ("POST", "/_sim/webhooks/{id}/secret"),
    }
    # Team mode's routes answer 404 team_mode_required on the local server these tests use;
    # their bodies are refused field by field in tests/api/test_team.py and, for the extend
    # (a number and a timestamp), test_namespace_lifetimes.py.
    team_only = {
        ("POST", "/_sim/team/tokens"),
        ("PUT", "/_sim/team/owners/{name}"),
        ("POST", "/_sim/namespaces/{name}/extend"),
    }
    covered = {templated.get((method, path), (method, path)) for method, path, _, _ in BODIES}
    assert described - covered == {
        advance_has_no_text,
        namespace_has_no_text,
        *simulations,
        *team_only,
    }


@pytest.mark.parametrize(
    ("method", "path", "base", "schema_name"),
    BODIES,
    ids=[f"{m} {p} {s}" for m, p, _, s in BODIES],
)
async def test_control_characters_and_10_kb_strings_in_every_text_field(
    api: Api, method: str, path: str, base: dict[str, Any], schema_name: str
) -> None:
    fields = text_fields(SCHEMAS[schema_name])
    assert fields, schema_name
    before = store_snapshot(api)
    problems = []
    for index, field in enumerate(fields):
        control = CONTROL_VALUES[index % len(CONTROL_VALUES)]
        for value in (control, CONTROL_VALUES[1], TEN_KB):
            body = with_value(base, field, value)
            status, out, response = await send(api, method, path, body)
            error = (out or {}).get("error", {}) if isinstance(out, dict) else {}
            if (status, error.get("code"), error.get("param")) != (400, "invalid_request", field):
                problems.append((field, value[:30], status, error))
            else:
                check_envelope(status, out, response)
                assert "Set-Cookie" not in response.headers
    assert not problems, problems
    assert store_snapshot(api) == before


async def test_control_characters_in_metadata_values_and_keys(api: Api) -> None:
    base = BODIES[8][2]
    before = store_snapshot(api)
    for metadata in ({"k": "a\r\nb"}, {"k\x00": "v"}, {"k": TEN_KB}):
        status, out, _ = await api.post(
            "/me/deposit-accounts", KEYS.sandbox_sk, json={**base, "metadata": metadata}
        )
        assert assert_error(status, out, 400, "invalid_request")["param"] == "metadata"
    assert store_snapshot(api) == before


# -- duplicate keys ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        (b'{"amount": 1, "paymentMethodId": "1001", "amount": 1000}', "amount"),
        (b'{"amount": 5, "paymentMethodId": "1001", "paymentMethodId": "1006"}',
         "paymentMethodId"),
        (b'{"amount": 5, "paymentMethodId": "1001", "customer": {"email": "a@b.co", '
         b'"email": "c@d.co"}}', "email"),
        # The same key spelled two ways: equal once decoded.
        (b'{"amount": 5, "paymentMethodId": "1001", "\\u0061mount": 900}', "amount"),
        (b'{"amount": 5, "paymentMethodId": "1001", "tag1": "x", "tag1" : "y"}', "tag1"),
    ],
)  # fmt: skip
async def test_duplicate_keys_are_refused_naming_the_key(api: Api, raw: bytes, key: str) -> None:
    before = store_snapshot(api)
    status, body, response = await api.post("/payments", KEYS.sandbox_sk, data=raw, headers=JSON)
    error = assert_error(status, body, 400, "invalid_json")
    check_envelope(status, body, response)
    assert error["param"] == key and key in error["message"]
    assert error["details"] == {"duplicateKey": key}
    assert store_snapshot(api) == before


async def test_keys_and_quotes_inside_strings_are_not_duplicates(api: Api) -> None:
    raw = (
        b'{"amount": 5, "paymentMethodId": "1001", "tag1": "amount\\": 9, \\"amount\\":",'
        b' "tag2": "{\\"x\\": 1, \\"x\\": 2}", "tag3": "\\\\\\"", "merchantOrderId": "\\"\\":"}'
    )
    assert json.loads(raw)["tag3"] == '\\"'
    status, body, _ = await api.post("/payments", KEYS.sandbox_sk, data=raw, headers=JSON)
    assert status == 200, body
    assert body["tag2"] == '{"x": 1, "x": 2}'


# -- types, depth --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body", "status", "code", "param"),
    [
        ("/payments", {"amount": "50", "paymentMethodId": "1001"}, 400, "amount_invalid",
         "amount"),
        ("/payments", {"amount": [50], "paymentMethodId": "1001"}, 400, "amount_invalid",
         "amount"),
        ("/payments", {"amount": 50, "paymentMethodId": 1001}, 400, "invalid_request",
         "paymentMethodId"),
        ("/payments", {**PAYMENT, "tag1": 50}, 400, "invalid_request", "tag1"),
        ("/payments", {**PAYMENT, "hostedCheckout": "true"}, 400, "invalid_request",
         "hostedCheckout"),
        ("/payments", {**PAYMENT, "customer": "Ana"}, 400, "invalid_request", "customer"),
        ("/me/payout/send", {"methodId": "sbx_po_mx_spei", "amount": "500",
         "recipient": SPEI_RECIPIENT}, 422, "amount_invalid", "amount"),
        ("/me/payout/send", {"methodId": "sbx_po_mx_spei", "amount": 500,
         "recipient": {**SPEI_RECIPIENT, "account": 12180001183597198}}, 400, "invalid_request",
         "recipient.account"),
        ("/webhooks", {"events": ["*"], "description": 5}, 400, "invalid_request",
         "description"),
        ("/webhooks", {"events": "payment.completed"}, 400, "invalid_request", "events"),
        ("/checkout/sessions", {"amount": "50", "customer": CUSTOMER}, 400, "invalid_request",
         "amount"),
        ("/_sim/clock/advance", {"seconds": "60"}, 400, "invalid_request", "seconds"),
    ],
)  # fmt: skip
async def test_strings_where_numbers_go_and_the_reverse(
    api: Api, path: str, body: dict[str, Any], status: int, code: str, param: str
) -> None:
    before = store_snapshot(api)
    got, out, response = await send(api, "POST", path, body)
    assert assert_error(got, out, status, code)["param"] == param
    check_envelope(got, out, response)
    assert store_snapshot(api) == before


@pytest.mark.parametrize(
    "raw",
    [
        b"[" * 10_000 + b"]" * 10_000,
        b'{"a":' * 10_000 + b"1" + b"}" * 10_000,
        b'{"amount": 5, "paymentMethodId": "1001", "tag1": ' + b"[" * 10_000 + b"]" * 10_000
        + b"}",
    ],
    ids=["arrays", "objects", "inside-a-field"],
)  # fmt: skip
async def test_10000_deep_nesting_is_refused(api: Api, raw: bytes) -> None:
    before = store_snapshot(api)
    status, body, response = await api.post("/payments", KEYS.sandbox_sk, data=raw, headers=JSON)
    assert_error(status, body, 400, "invalid_json")
    check_envelope(status, body, response)
    assert store_snapshot(api) == before


@pytest.mark.parametrize("field", ["tag1", "deep", "customer"])
async def test_nesting_under_the_parser_limit_is_refused_too(api: Api, field: str) -> None:
    # 1,000 levels parse (orjson allows 1,024) but once made a validator's error message
    # overflow the stack (a 500); a body deeper than 32 levels is refused as it is read.
    deep = ("[" * 1_000 + "]" * 1_000).encode()
    raw = b'{"amount": 5, "paymentMethodId": "1001", "%s": %s}' % (field.encode(), deep)
    before = store_snapshot(api)
    status, body, response = await api.post("/payments", KEYS.sandbox_sk, data=raw, headers=JSON)
    error = assert_error(status, body, 400, "invalid_json")
    check_envelope(status, body, response)
    assert error["details"] == {"maxDepth": 32}
    assert store_snapshot(api) == before
    # 32 levels are fine as JSON (the field's schema decides the rest).
    ok = b'{"amount": 5, "paymentMethodId": "1001", "tag1": ' + b"[" * 31 + b"]" * 31 + b"}"
    status, body, _ = await api.post("/payments", KEYS.sandbox_sk, data=ok, headers=JSON)
    assert assert_error(status, body, 400, "invalid_request")["param"] == "tag1"


# -- compressed bodies ---------------------------------------------------------------------


async def test_a_gzip_bomb_is_refused_without_inflating_it(api: Api) -> None:
    # 200 MB of zeros in about 200 kB: inflating it is what the server must not do.
    bomb = gzip.compress(b"0" * 200_000_000, compresslevel=9)
    assert len(bomb) < 1024 * 1024
    before = store_snapshot(api)
    started = time.perf_counter()
    status, body, response = await api.post(
        "/payments",
        KEYS.sandbox_sk,
        data=bomb,
        headers={**JSON, "Content-Encoding": "gzip"},
    )
    assert time.perf_counter() - started < 2
    error = assert_error(status, body, 415, "content_type_required")
    check_envelope(status, body, response)
    assert error["details"] == {"contentEncoding": "gzip"}
    assert response.headers.get("Connection", "").lower() == "close"
    assert store_snapshot(api) == before


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "x-gzip", "gzip, identity"])
async def test_any_content_encoding_is_415(api: Api, encoding: str) -> None:
    raw = json.dumps(PAYMENT).encode()
    data = zlib.compress(raw) if encoding == "deflate" else gzip.compress(raw)
    before = store_snapshot(api)
    status, body, _ = await api.post(
        "/payments", KEYS.sandbox_sk, data=data, headers={**JSON, "Content-Encoding": encoding}
    )
    assert_error(status, body, 415, "content_type_required")
    assert store_snapshot(api) == before


async def test_identity_encoding_is_plain_json(api: Api) -> None:
    status, body, _ = await api.post(
        "/payments",
        KEYS.sandbox_sk,
        data=json.dumps(PAYMENT),
        headers={**JSON, "Content-Encoding": "identity"},
    )
    assert status == 200, body


# -- bytes that are not UTF-8 --------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        '{"amount": 5, "paymentMethodId": "1001", "userName": "José Núñez"}'.encode("latin-1"),
        b'{"amount": 5, "paymentMethodId": "1001", "tag1": "\xc3\x28"}',  # broken sequence
        b'{"amount": 5, "paymentMethodId": "1001", "tag1": "\xed\xa0\x80"}',  # a UTF-8 surrogate
        b'{"amount": 5, "paymentMethodId": "1001", "tag1": "\xf8\x88\x80\x80\x80"}',
    ],
)
async def test_non_utf8_bytes_are_invalid_json(api: Api, raw: bytes) -> None:
    before = store_snapshot(api)
    status, body, response = await api.post("/payments", KEYS.sandbox_sk, data=raw, headers=JSON)
    assert_error(status, body, 400, "invalid_json")
    check_envelope(status, body, response)
    assert store_snapshot(api) == before


# -- header injection ----------------------------------------------------------------------

INJECTION = "https://shop.example/back\r\nSet-Cookie: session=stolen\r\nLocation: https://evil"


@pytest.mark.parametrize(
    ("path", "body", "param"),
    [
        ("/payments", {**PAYMENT, "hostedCheckout": True, "returnUrl": INJECTION}, "returnUrl"),
        ("/checkout/sessions", {"amount": 50, "customer": CUSTOMER, "returnUrl": INJECTION},
         "returnUrl"),
        ("/webhooks", {"events": ["*"], "url": INJECTION}, "url"),
        ("/payments", {**PAYMENT, "userName": "Ana\r\nX-Injected: 1"}, "userName"),
        ("/me/deposit-accounts", {**BODIES[8][2], "name": "Ana\nLópez"}, "name"),
        ("/me/payout/send", {"methodId": "sbx_po_mx_spei", "amount": 500,
         "recipient": {**SPEI_RECIPIENT, "name": "Ana\r\nLópez"}}, "recipient.name"),
    ],
)  # fmt: skip
async def test_header_injection_in_urls_and_names_is_refused(
    api: Api, path: str, body: dict[str, Any], param: str
) -> None:
    before = store_snapshot(api)
    status, out, response = await send(api, "POST", path, body)
    assert assert_error(status, out, 400, "invalid_request")["param"] == param
    assert "Set-Cookie" not in response.headers and "X-Injected" not in response.headers
    assert store_snapshot(api) == before


async def test_header_injection_through_a_path_stays_in_the_body(api: Api) -> None:
    for path in (
        "/api/v1/payments/TXN%0D%0ASet-Cookie:%20session=stolen",
        "/c/TXN%0D%0ALocation:%20https://evil",
        "/_sim/provider/TXN%0D%0ASet-Cookie:%20x",
    ):
        response = await api.client.get(
            path, headers={"Authorization": f"Bearer {KEYS.sandbox_sk}"}, allow_redirects=False
        )
        assert response.status == 404, path
        assert "Set-Cookie" not in response.headers and "Location" not in response.headers
