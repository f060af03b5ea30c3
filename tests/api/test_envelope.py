"""The one error envelope, request ids, and the body / routing rules every endpoint shares.

Spec: Errors (envelope, HTTP statuses), Common request headers (Content-Type), invalid request
errors; design.md 1.3 (the control plane uses the same envelope).
"""

from __future__ import annotations

from typing import Any

import pytest

from simulator.http.keys import STORE
from tests.conftest import Api, Keys, assert_error

ENVELOPE_KEYS = {"code", "type", "message", "param", "decline_code", "requestId", "details"}
JSON = {"Content-Type": "application/json"}
PAYMENT = {"amount": 50, "paymentMethodId": "1001"}
MIB = 1024 * 1024


def store_snapshot(api: Api) -> dict[str, dict[str, Any]]:
    """Every document the server keeps, by collection: equal before and after = no state changed."""
    store = api.client.app[STORE]
    return {
        name: dict(zip(table.ids(), table.values(), strict=True))
        for name in store.table_names()
        if (table := store.table(name))
    }


def check_envelope(status: int, body: Any, response: Any) -> dict[str, Any]:
    """Exactly {error: {code, type, message, requestId, ...}}, with X-Request-Id mirrored."""
    assert 400 <= status < 600, (status, body)
    assert response.content_type == "application/json", response.content_type
    assert isinstance(body, dict) and set(body) == {"error"}, body
    error = body["error"]
    assert isinstance(error, dict)
    assert {"code", "type", "message", "requestId"} <= set(error) <= ENVELOPE_KEYS, error
    for name in ("code", "type", "message", "requestId"):
        assert isinstance(error[name], str) and error[name], (name, error)
    assert error["requestId"].startswith("req_")
    assert response.headers["X-Request-Id"] == error["requestId"]
    if "param" in error:
        assert isinstance(error["param"], str)
    if "details" in error:
        assert isinstance(error["details"], dict)
    return error


# (method, path, key, kwargs, status, code): one of each family the API produces.
ERROR_CASES: list[tuple[str, str, str | None, dict[str, Any], int, str]] = [
    ("GET", "/ping", None, {}, 401, "missing_credentials"),
    ("GET", "/ping", "sk_test_000000000000000000000000", {}, 401, "invalid_api_key"),
    ("GET", "/ping", "not.a.token", {}, 401, "invalid_token"),
    ("GET", "/me", Keys.sandbox_pk, {}, 403, "key_kind_not_allowed"),
    ("GET", "/ping", Keys.suspended_merchant_sk, {}, 403, "merchant_suspended"),
    ("GET", "/ping", Keys.promoted_sandbox_sk, {}, 403, "environment_mismatch"),
    ("GET", "/_sim/clock", Keys.live_sk, {}, 400, "production_key_refused"),
    ("POST", "/payments", Keys.legacy_sk, {"json": PAYMENT}, 401, "shop_required"),
    ("GET", "/payments/TXN-NOPE", Keys.sandbox_sk, {}, 404, "transaction_not_found"),
    ("GET", "/payment-methods?country=ZZ", Keys.sandbox_sk, {}, 400, "invalid_request"),
    ("POST", "/payments", Keys.sandbox_sk, {"json": {"paymentMethodId": "1001"}}, 400,
     "missing_field"),
    ("POST", "/payments", Keys.sandbox_sk, {"json": {**PAYMENT, "amount": -1}}, 400,
     "amount_invalid"),
    ("POST", "/payments", Keys.sandbox_sk, {"json": {**PAYMENT, "paymentMethodId": "9999"}},
     422, "cascade_exhausted"),
    ("POST", "/payments", Keys.sandbox_sk, {"data": "amount=50", "headers": {
        "Content-Type": "text/plain"}}, 415, "content_type_required"),
    ("POST", "/payments", Keys.sandbox_sk, {"data": "{", "headers": JSON}, 400, "invalid_json"),
    ("GET", "/nope", Keys.sandbox_sk, {}, 404, "route_not_found"),
    ("DELETE", "/ping", Keys.sandbox_sk, {}, 405, "method_not_allowed"),
    ("POST", "/auth/token", None, {"json": {"apiKey": Keys.sandbox_pk, "secretKey": Keys.live_sk}},
     401, "invalid_api_key"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("method", "path", "key", "kwargs", "status", "code"),
    ERROR_CASES,
    ids=[f"{c[0]} {c[1]} {c[5]}" for c in ERROR_CASES],
)
async def test_every_error_uses_the_envelope(
    api: Api,
    method: str,
    path: str,
    key: str | None,
    kwargs: dict[str, Any],
    status: int,
    code: str,
) -> None:
    got_status, body, response = await api.call(method, path, key, **kwargs)
    assert_error(got_status, body, status, code)
    check_envelope(got_status, body, response)


async def test_request_ids_are_unique(api: Api, keys: Keys) -> None:
    seen = set()
    for _ in range(5):
        status, body, response = await api.get("/nope", keys.sandbox_sk)
        seen.add(check_envelope(status, body, response)["requestId"])
    for _ in range(5):
        status, _body, response = await api.get("/ping", keys.sandbox_sk)
        seen.add(response.headers["X-Request-Id"])
    assert len(seen) == 10


async def test_success_responses_carry_a_request_id(api: Api, keys: Keys) -> None:
    responses = [
        await api.get("/ping", keys.sandbox_sk),
        await api.get("/ping", keys.sandbox_pk),
        await api.get("/me", keys.sandbox_sk),
        await api.get("/me/balance", keys.sandbox_sk),
        await api.get("/payment-methods", keys.sandbox_sk),
        await api.post("/payments", keys.sandbox_sk, json=PAYMENT),
        await api.get("/payments", keys.sandbox_sk),
        await api.post(
            "/auth/token", json={"apiKey": keys.sandbox_pk, "secretKey": keys.sandbox_sk}
        ),
        await api.get("/_sim/clock", keys.sandbox_sk),
    ]
    for status, body, response in responses:
        assert 200 <= status < 300, body
        assert response.headers["X-Request-Id"].startswith("req_")
    icon = await api.client.get("/static/icons/spei.svg")
    assert icon.status == 200 and icon.headers["X-Request-Id"].startswith("req_")


# -- Content-Type --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "application/xml", None],
)
async def test_non_json_content_type_is_415(api: Api, keys: Keys, content_type: str | None) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    raw = b'{"amount": 50, "paymentMethodId": "1001"}'  # JSON text, but not declared as JSON
    status, body, response = await api.post("/payments", keys.sandbox_sk, data=raw, headers=headers)
    error = assert_error(status, body, 415, "content_type_required")
    check_envelope(status, body, response)
    assert error["type"] == "invalid_request_error"
    # Nothing was charged.
    status, page, _ = await api.get("/payments", keys.sandbox_sk)
    assert page["pagination"]["total"] == 0


@pytest.mark.parametrize(
    "path", ["/payments", "/transactions", "/auth/token", "/auth/refresh", "/_sim/clock/advance"]
)
async def test_415_on_every_json_endpoint(api: Api, keys: Keys, path: str) -> None:
    status, body, response = await api.post(
        path, keys.sandbox_sk, data="seconds=1", headers={"Content-Type": "text/plain"}
    )
    assert_error(status, body, 415, "content_type_required")
    check_envelope(status, body, response)


@pytest.mark.parametrize(
    "content_type", ["application/json; charset=utf-8", "application/json;charset=UTF-8"]
)
async def test_json_with_parameters_is_accepted(api: Api, keys: Keys, content_type: str) -> None:
    raw = b'{"amount": 50, "paymentMethodId": "1001"}'
    status, body, _ = await api.post(
        "/payments", keys.sandbox_sk, data=raw, headers={"Content-Type": content_type}
    )
    assert status == 200, body


# -- invalid JSON --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        b"{",
        b'{"amount": 50,',
        b"{'amount': 50}",
        b'{"amount": 50 "paymentMethodId": "1001"}',
        b'{"amount": 50, "paymentMethodId": "1001"} trailing',
        b'{"amount": NaN, "paymentMethodId": "1001"}',
        b'{"amount": Infinity, "paymentMethodId": "1001"}',
        b'{"amount": -Infinity, "paymentMethodId": "1001"}',
        b'{"amount": 1e400, "paymentMethodId": "1001"}',
        b'{"amount": 50, "paymentMethodId": "\xff\xfe"}',  # not UTF-8
        b"\xff\xfe{\x00}\x00",  # UTF-16 with a BOM
        b'{"amount": 50, "paymentMethodId": "1001", "tag1": "\\ud800"}',  # lone surrogate
        b"[" * 5000,  # nesting far beyond any real body
        b"undefined",
    ],
)
async def test_unparseable_json_is_400_invalid_json(api: Api, keys: Keys, raw: bytes) -> None:
    before = store_snapshot(api)
    status, body, response = await api.post("/payments", keys.sandbox_sk, data=raw, headers=JSON)
    assert status != 500, body
    assert_error(status, body, 400, "invalid_json")
    check_envelope(status, body, response)
    assert store_snapshot(api) == before


async def test_invalid_json_on_the_auth_and_control_endpoints(api: Api, keys: Keys) -> None:
    for path in ("/auth/token", "/auth/refresh", "/_sim/clock/advance"):
        status, body, response = await api.post(
            path, keys.sandbox_sk, data=b'{"seconds": NaN}', headers=JSON
        )
        assert_error(status, body, 400, "invalid_json")
        check_envelope(status, body, response)


@pytest.mark.parametrize("raw", [b"[]", b'[{"amount": 50}]', b"42", b'"text"', b"null", b"true"])
async def test_a_json_body_that_is_not_an_object_is_invalid_request(
    api: Api, keys: Keys, raw: bytes
) -> None:
    before = store_snapshot(api)
    status, body, response = await api.post("/payments", keys.sandbox_sk, data=raw, headers=JSON)
    error = assert_error(status, body, 400, "invalid_request")
    check_envelope(status, body, response)
    assert error["details"]["issues"], error
    assert store_snapshot(api) == before


async def test_an_empty_body_is_invalid_request(api: Api, keys: Keys) -> None:
    for raw in (b"", b"   \n"):
        status, body, response = await api.post(
            "/payments", keys.sandbox_sk, data=raw, headers=JSON
        )
        assert_error(status, body, 400, "invalid_request")
        check_envelope(status, body, response)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"amount": 1e30, "paymentMethodId": "1001"}',
        b'{"amount": 1e30, "currency": "MXN", "paymentMethodId": "1001"}',
        b'{"amount": 123456789012345678901234567890, "paymentMethodId": "1001"}',
    ],
)
async def test_a_huge_amount_is_a_400_not_a_500(api: Api, keys: Keys, raw: bytes) -> None:
    # Finite JSON numbers beyond Decimal's 28-digit precision (orjson also reads an integer over
    # 64 bits as a float) once overflowed while rounding: a 500 instead of the 100,000 USD cap.
    status, body, response = await api.post("/payments", keys.sandbox_sk, data=raw, headers=JSON)
    check_envelope(status, body, response)
    assert status == 400, body
    assert body["error"]["code"] in ("amount_above_maximum", "amount_invalid")


# -- body size -----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/payments", "/auth/token"])
async def test_a_body_over_one_mib_is_413(api: Api, keys: Keys, path: str) -> None:
    raw = b'{"amount": 50, "paymentMethodId": "1001", "tag1": "' + b"x" * MIB + b'"}'
    status, body, response = await api.post(path, keys.sandbox_sk, data=raw, headers=JSON)
    error = assert_error(status, body, 413, "payload_too_large")
    check_envelope(status, body, response)
    assert "1048576" in error["message"] or error.get("details", {}).get("limitBytes") == MIB


async def test_an_oversized_body_of_any_type_is_413(api: Api, keys: Keys) -> None:
    status, body, response = await api.post(
        "/payments", keys.sandbox_sk, data=b"x" * (MIB + 1), headers={"Content-Type": "text/plain"}
    )
    assert_error(status, body, 413, "payload_too_large")
    check_envelope(status, body, response)


def padded_payment(size: int) -> bytes:
    """A valid payment body of exactly `size` bytes (the padding is insignificant whitespace)."""
    core = b'{"amount": 50, "paymentMethodId": "1001"'
    return core + b" " * (size - len(core) - 1) + b"}"


async def test_one_byte_over_the_limit_is_413_and_the_limit_itself_is_not(
    api: Api, keys: Keys
) -> None:
    before = store_snapshot(api)
    status, body, response = await api.post(
        "/payments", keys.sandbox_sk, data=padded_payment(MIB + 1), headers=JSON
    )
    error = assert_error(status, body, 413, "payload_too_large")
    check_envelope(status, body, response)
    assert error["details"]["limitBytes"] == MIB
    assert store_snapshot(api) == before
    status, body, _ = await api.post(
        "/payments", keys.sandbox_sk, data=padded_payment(MIB), headers=JSON
    )
    assert status == 200, body


async def test_a_large_body_under_the_limit_is_parsed(api: Api, keys: Keys) -> None:
    # Just under 1 MiB of valid JSON reaches validation (the tag is too long: 400, not 413).
    raw = b'{"amount": 50, "paymentMethodId": "1001", "tag1": "' + b"x" * (MIB - 100) + b'"}'
    status, body, response = await api.post("/payments", keys.sandbox_sk, data=raw, headers=JSON)
    error = assert_error(status, body, 400, "invalid_request")
    assert error["param"] == "tag1"
    check_envelope(status, body, response)


# -- routing -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/nope",
        "/api/v1/payments/TXN-1/nope",
        "/api/v1/payments/",
        "/api/v1",
        "/api/v2/ping",
        "/totally/elsewhere",
        "/static/icons/nope.svg",
        "/static/icons/",
        "/static/icons/..%2F..%2Fapp.py",
        "/_sim/nope",
    ],
)
async def test_unknown_routes_are_404_route_not_found(api: Api, keys: Keys, path: str) -> None:
    for headers in ({}, {"Authorization": f"Bearer {keys.sandbox_sk}"}):
        response = await api.client.get(path, headers=headers)
        body = await response.json(content_type=None)
        assert_error(response.status, body, 404, "route_not_found")
        check_envelope(response.status, body, response)


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("DELETE", "/api/v1/ping", {"GET"}),
        ("POST", "/api/v1/ping", {"GET"}),
        ("PUT", "/api/v1/payments", {"GET", "POST"}),
        ("PATCH", "/api/v1/payments/TXN-1", {"GET"}),
        ("GET", "/api/v1/auth/token", {"POST"}),
        ("GET", "/api/v1/auth/refresh", {"POST"}),
        ("GET", "/api/v1/payments/TXN-1/refund", {"POST"}),
        ("DELETE", "/api/v1/me", {"GET"}),
        ("GET", "/_sim/clock/advance", {"POST"}),
        ("POST", "/static/icons/spei.svg", {"GET"}),
    ],
)
async def test_wrong_http_method_is_405_with_allow(
    api: Api, keys: Keys, method: str, path: str, allowed: set[str]
) -> None:
    response = await api.client.request(
        method, path, headers={"Authorization": f"Bearer {keys.sandbox_sk}"}
    )
    body = await response.json(content_type=None)
    error = assert_error(response.status, body, 405, "method_not_allowed")
    check_envelope(response.status, body, response)
    allow = {m.strip() for m in response.headers["Allow"].split(",")}
    assert allowed <= allow and method not in allow, allow
    assert set(error["details"]["allowed"]) == allow


async def test_405_needs_no_credentials(api: Api) -> None:
    response = await api.client.delete("/api/v1/ping")
    body = await response.json(content_type=None)
    assert_error(response.status, body, 405, "method_not_allowed")
    assert "GET" in response.headers["Allow"]


async def test_auth_comes_before_the_body(api: Api) -> None:
    # Without credentials the body is never judged: 401, not 415 or 400.
    for raw, headers in ((b"{", JSON), (b"x", {"Content-Type": "text/plain"})):
        status, body, response = await api.post("/payments", data=raw, headers=headers)
        assert_error(status, body, 401, "missing_credentials")
        check_envelope(status, body, response)


async def test_the_landing_page_is_html_for_a_browser_and_json_for_the_rest(api: Api) -> None:
    browser = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
    response = await api.client.get("/", headers=browser)
    html = await response.text()
    assert response.status == 200 and response.content_type == "text/html"
    assert 'href="/api/v1/openapi.json"' in html and "/checkout/&lt;token&gt;" in html
    assert (
        "POST /_sim/clock/advance" in html
        and "default-src 'none'" in response.headers["Content-Security-Policy"]
    )
    for accept in ("application/json", "*/*"):
        response = await api.client.get("/", headers={"Accept": accept})
        body = await response.json()
        assert response.status == 200, body
        assert body["openapi"].endswith("/api/v1/openapi.json")
        assert body["api"].endswith("/api/v1") and body["version"]
        assert {"GET", "POST"} == {entry["method"] for entry in body["controlPlane"]}
        assert body["checkout"]["transaction"].endswith("/c/{transaction_id}")


async def test_the_landing_page_names_its_icon_and_favicon_ico_leads_to_it(api: Api) -> None:
    response = await api.client.get("/", headers={"Accept": "text/html"})
    html = await response.text()
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in html
    assert "img-src 'self'" in response.headers["Content-Security-Policy"]
    icon = await api.client.get("/favicon.ico", allow_redirects=False)
    assert icon.status == 200 and icon.content_type == "image/svg+xml"
