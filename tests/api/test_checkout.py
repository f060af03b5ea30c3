"""Hosted checkout through the HTTP API and its pages, against api-spec.txt ("Checkout session",
POST /checkout/sessions, GET /checkout/sessions/<token>, POST .../select, checkout errors, Limits).

Page tests here read the HTML the server sends; tests/browser drives the same pages in Chromium.
"""

from __future__ import annotations

import base64
import re
from decimal import Decimal
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
from aiohttp.test_utils import TestClient

from simulator.app import create_app
from simulator.clock import parse_iso
from simulator.domain.checkout.service import buyer_ip
from simulator.domain.instructions import _boleto_general_check_digit, boleto_line
from simulator.domain.states import SIMULATE_ACTIONS
from simulator.http.keys import CHECKOUT, CONTEXT, STORE
from simulator.http.pages.codes import boleto_barcode_digits, itf_svg, qr_svg
from simulator.settings import Settings
from tests.conftest import Api, Keys, assert_error

KEYS = Keys()
CPF = "52998224725"  # valid check digits
DNI_AR = "12345678"
RFC = "XAXX010101000"  # SAT's generic RFC, always valid
CUSTOMER = {
    "firstName": "Ana",
    "lastName": "Souza",
    "email": "ana@example.com",
    "phone": "+5511987654321",
}
RETURN_URL = "https://shop.example/orders/42?from=checkout"
DAY = 86_400
CREATE_FIELDS = {
    "sessionId",
    "checkoutUrl",
    "paymentMethodId",
    "status",
    "amount",
    "currency",
    "country",
    "expiresAt",
}
READ_FIELDS = CREATE_FIELDS | {"token", "customer", "customerIp", "returnUrl", "completedTxId"}
ONE_SHOT_FIELDS = {
    "sessionId",
    "checkoutUrl",
    "paymentMethodId",
    "status",
    "amount",
    "currency",
    "amountLocal",
    "currencyLocal",
    "country",
    "expiresAt",
}
METHOD_ID = re.compile(r'id="method-([A-Za-z0-9_]+)"')


# -- helpers ---------------------------------------------------------------------------------


async def call(
    api: Api,
    method: str,
    path: str,
    key: str | None = None,
    *,
    json: Any = None,
    headers: dict[str, str] | None = None,
    data: Any = None,
) -> tuple[int, Any, Any]:
    """Like `Api.call`, always under /api/v1 (Api.call drops the prefix for paths starting
    with `/c`, which catches `/checkout/...`; a conftest bug, reported)."""
    all_headers = dict(headers or {})
    if key is not None:
        all_headers["Authorization"] = f"Bearer {key}"
    page = path.startswith(("/checkout/", "/c/", "/_sim/")) and not path.startswith(
        "/checkout/sessions"
    )
    url = path if page else f"/api/v1{path}"
    response = await api.client.request(
        method, url, json=json, data=data, headers=all_headers, allow_redirects=False
    )
    text = await response.text()
    if response.content_type == "application/json":
        return response.status, await response.json(), response
    return response.status, text, response


def origin(api: Api) -> str:
    return str(api.client.make_url("")).rstrip("/")


async def new_session(
    api: Api, key: str = KEYS.sandbox_sk, *, customer: dict[str, Any] | None = None, **body: Any
) -> dict[str, Any]:
    payload = {"amount": 50, "customer": customer or CUSTOMER, **body}
    status, data, _ = await call(api, "POST", "/checkout/sessions", key, json=payload)
    assert status == 200, data
    return data


async def read(api: Api, token: str) -> dict[str, Any]:
    status, data, _ = await call(api, "GET", f"/checkout/sessions/{token}")
    assert status == 200, data
    return data


async def select(api: Api, token: str, method_id: str, **body: Any) -> tuple[int, Any, Any]:
    return await call(
        api,
        "POST",
        f"/checkout/sessions/{token}/select",
        json={"paymentMethodId": method_id, **body},
    )


def stored_tx(api: Api, tx_id: str) -> dict[str, Any]:
    """The stored record, for fields the API never shows (userIp, userName)."""
    tx = api.client.app[CONTEXT].transactions.get(tx_id)
    assert tx is not None
    return tx


async def now(api: Api) -> float:
    status, body, _ = await api.get("/_sim/clock", KEYS.sandbox_sk)
    assert status == 200
    return parse_iso(body["now"]).timestamp()


def grid(html: str) -> set[str]:
    return set(METHOD_ID.findall(html))


# -- selector mode: create -------------------------------------------------------------------


async def test_selector_session_is_created_awaiting_a_method(api: Api) -> None:
    before = await now(api)
    session = await new_session(api, country="BR", returnUrl=RETURN_URL)
    assert set(session) == CREATE_FIELDS
    token = session["sessionId"]
    assert token.startswith("cs_")
    assert session["checkoutUrl"] == f"{origin(api)}/checkout/{token}"
    assert session["paymentMethodId"] is None
    assert session["status"] == "awaiting_method"
    assert session["amount"] == 50 and session["currency"] == "USD"
    assert session["country"] == "BRA"  # ISO-2 in, ISO-3 out
    expires = parse_iso(session["expiresAt"]).timestamp()
    assert before + DAY - 1 <= expires <= before + DAY + 5


async def test_presentment_currency_is_kept_on_the_session(api: Api) -> None:
    session = await new_session(api, amount=250, currency="BRL", country="br")
    assert (session["amount"], session["currency"]) == (250, "BRL")
    status, html, _ = await call(api, "GET", f"/checkout/{session['sessionId']}")
    assert status == 200
    # The buyer pays exactly the BRL asked on a BRL rail (fx decision: no double conversion).
    assert 'id="amount-1006" data-amount="250.00" data-currency="BRL"' in html


async def test_tokens_are_long_random_and_reproducible_only_under_a_seed(
    api: Api, aiohttp_client: Any, settings: Settings
) -> None:
    tokens = {(await new_session(api))["sessionId"] for _ in range(3)}
    assert len(tokens) == 3
    for token in tokens:
        raw = token.removeprefix("cs_")
        assert re.fullmatch(r"[A-Za-z0-9_-]+", raw)
        assert len(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4))) * 8 >= 128
    # A second server with the same seed answers the same (a seeded server is reproducible) ...
    twin: TestClient = await aiohttp_client(create_app(Settings(data_dir=None, seed=settings.seed)))
    assert (await new_session(Api(twin)))["sessionId"] in tokens
    # ... and without a seed (every `payorch serve`) tokens come from the OS's CSPRNG.
    unseeded = [await aiohttp_client(create_app(Settings(data_dir=None))) for _ in range(2)]
    assert len({(await new_session(Api(server)))["sessionId"] for server in unseeded}) == 2


async def test_customer_strings_are_trimmed(api: Api) -> None:
    padded = {key: f"  {value}\t" for key, value in CUSTOMER.items()} | {"documentId": f" {CPF} "}
    session = await new_session(api, customer=padded)
    customer = (await read(api, session["sessionId"]))["customer"]
    assert customer["firstName"] == "Ana" and customer["email"] == "ana@example.com"
    assert customer["phone"] == "+5511987654321"
    assert customer["documentId"] == "*******4725"  # masked on the public read


@pytest.mark.parametrize(
    ("customer", "path", "missing"),
    [
        ({**CUSTOMER, "firstName": None}, "customer.firstName", True),
        ({k: v for k, v in CUSTOMER.items() if k != "lastName"}, "customer.lastName", True),
        ({**CUSTOMER, "email": "   "}, "customer.email", True),  # blank after trimming
        ({**CUSTOMER, "phone": ""}, "customer.phone", True),
        ({**CUSTOMER, "firstName": "A" * 61}, "customer.firstName", False),
        ({**CUSTOMER, "lastName": "B" * 61}, "customer.lastName", False),
        ({**CUSTOMER, "email": "ana@"}, "customer.email", False),
        ({**CUSTOMER, "email": "a" * 64 + "@" + "b" * 186 + ".com"}, "customer.email", False),
        ({**CUSTOMER, "phone": "+" + "1" * 40}, "customer.phone", False),
        ({**CUSTOMER, "documentId": "1" * 41}, "customer.documentId", False),
        ({**CUSTOMER, "firstName": 42}, "customer.firstName", False),
        ({**CUSTOMER, "nickname": "Aninha"}, "customer.nickname", False),
    ],
)
async def test_customer_validation(
    api: Api, customer: dict[str, Any], path: str, missing: bool
) -> None:
    status, body, _ = await call(
        api,
        "POST",
        "/checkout/sessions",
        KEYS.sandbox_sk,
        json={"amount": 50, "customer": customer},
    )
    error = assert_error(status, body, 400, "invalid_request")
    details = error["details"]
    assert [issue["path"] for issue in details["issues"]] == [path]
    assert details["missingFields"] == ([path] if missing else [])
    assert (
        details["helpUrl"] == f"{origin(api)}/api/v1/openapi.json#/paths/~1checkout~1sessions/post"
    )
    assert error["param"] == path


async def test_customer_limits_are_inclusive(api: Api) -> None:
    edge = {
        "firstName": "A" * 60,
        "lastName": "B" * 60,
        "email": "a" * 64 + "@" + "b" * 185 + ".com",  # 254
        "phone": "+" + "1" * 39,  # 40
        "documentId": "D" * 40,
    }
    assert len(edge["email"]) == 254
    session = await new_session(api, customer=edge)
    customer = (await read(api, session["sessionId"]))["customer"]
    assert customer["firstName"] == "A" * 60 and customer["email"] == edge["email"]


async def test_every_problem_is_reported_at_once(api: Api) -> None:
    status, body, _ = await call(
        api, "POST", "/checkout/sessions", KEYS.sandbox_sk, json={"currency": "dollars", "x": 1}
    )
    details = assert_error(status, body, 400, "invalid_request")["details"]
    paths = [issue["path"] for issue in details["issues"]]
    assert set(paths) == {
        "x",
        "amount",
        "currency",
        "customer.firstName",
        "customer.lastName",
        "customer.email",
        "customer.phone",
    }
    # Flat list of what is absent; malformed values are issues only.
    assert details["missingFields"] == [
        "amount",
        "customer.firstName",
        "customer.lastName",
        "customer.email",
        "customer.phone",
    ]
    assert all(issue["message"] for issue in details["issues"])


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("amount", 0),
        ("amount", -5),
        ("amount", "50"),
        ("amount", True),
        ("country", "ZZ"),
        ("country", ""),
        ("currency", "US"),
        ("currency", ""),
        ("currency", "brl"),
        ("currency", " BRL "),
        ("returnUrl", "javascript:alert(1)"),
        ("returnUrl", "/relative"),
        ("merchantOrderId", "o" * 121),
        ("customer", "Ana Souza"),
    ],
)
async def test_malformed_fields_are_issues(api: Api, field: str, value: Any) -> None:
    body = {"amount": 50, "customer": CUSTOMER, field: value}
    status, data, _ = await call(api, "POST", "/checkout/sessions", KEYS.sandbox_sk, json=body)
    details = assert_error(status, data, 400, "invalid_request")["details"]
    assert [issue["path"] for issue in details["issues"]] == [field]
    assert details["missingFields"] == []


@pytest.mark.parametrize(
    ("body", "currency"),
    [
        ({"amount": 10.005}, "USD"),
        ({"amount": 10.005, "currency": "MXN"}, "MXN"),
        ({"amount": 5000.5, "currency": "CLP"}, "CLP"),
        ({"amount": 10.005, "paymentMethodId": "1001", "userName": "Ana Souza"}, "USD"),
        ({"amount": 5000.5, "currency": "CLP", "paymentMethodId": "1001"}, "CLP"),
    ],
)
async def test_an_amount_finer_than_its_currency_is_refused_in_both_modes(
    api: Api, body: dict[str, Any], currency: str
) -> None:
    """Refused, not rounded (10.005 USD used to become a 10.01 USD session), in checkout's one
    400 shape: the problem is the `amount` issue."""
    payload = {"customer": CUSTOMER, **body}
    status, data, _ = await call(api, "POST", "/checkout/sessions", KEYS.sandbox_sk, json=payload)
    details = assert_error(status, data, 400, "invalid_request")["details"]
    assert [issue["path"] for issue in details["issues"]] == ["amount"]
    assert currency in details["issues"][0]["message"]
    assert details["missingFields"] == []
    status, page, _ = await api.get("/payments", KEYS.sandbox_sk)
    assert page["pagination"]["total"] == 0


@pytest.mark.parametrize(
    ("amount", "country", "status", "code"),
    [
        (100_001, None, 400, "amount_above_maximum"),  # the converted-charge cap
        (1e30, None, 400, "amount_above_maximum"),
        (0.10, "US", 400, "amount_below_minimum"),  # every US method starts at 0.50 USD
    ],
)
async def test_an_amount_no_method_can_take_is_refused_at_creation(
    api: Api, amount: float, country: str | None, status: int, code: str
) -> None:
    body = {"amount": amount, "customer": CUSTOMER} | ({"country": country} if country else {})
    got, data, _ = await call(api, "POST", "/checkout/sessions", KEYS.sandbox_sk, json=body)
    assert_error(got, data, status, code)


async def test_currency_without_a_rate_is_fx_unavailable(api: Api) -> None:
    body = {"amount": 50, "currency": "JPY", "customer": CUSTOMER}
    status, data, _ = await call(api, "POST", "/checkout/sessions", KEYS.sandbox_sk, json=body)
    assert assert_error(status, data, 422, "fx_unavailable")["details"] == {"currency": "JPY"}


@pytest.mark.parametrize(
    ("key", "status", "code"),
    [
        (None, 401, "missing_credentials"),
        (KEYS.sandbox_pk, 403, "key_kind_not_allowed"),
        (KEYS.legacy_sk, 401, "shop_required"),
    ],
)
async def test_create_needs_a_shop_secret_key(
    api: Api, key: str | None, status: int, code: str
) -> None:
    body = {"amount": 50, "customer": CUSTOMER}
    got, data, _ = await call(api, "POST", "/checkout/sessions", key, json=body)
    assert_error(got, data, status, code)


async def test_merchant_wide_key_names_the_shop(api: Api) -> None:
    session = await new_session(api, KEYS.legacy_sk, shopId="shp_mazul_tienda")
    assert session["status"] == "awaiting_method"


async def test_a_country_without_shop_methods_cannot_start_checkout(api: Api) -> None:
    # shp_lverde_loja enables Brazil and US methods only (no sandbox built-in is Argentine).
    body = {"amount": 50, "country": "AR", "customer": CUSTOMER}
    status, data, _ = await call(api, "POST", "/checkout/sessions", KEYS.restricted_sk, json=body)
    assert_error(status, data, 403, "method_not_enabled_for_shop")


# -- the grid --------------------------------------------------------------------------------


async def test_country_filters_the_grid(api: Api) -> None:
    brazil = await new_session(api, country="BRA")
    _, html, _ = await call(api, "GET", f"/checkout/{brazil['sessionId']}")
    assert grid(html) == {"1006", "1007", "1008", "1009", "sbx_pix"}
    everything = await new_session(api)
    _, html, _ = await call(api, "GET", f"/checkout/{everything['sessionId']}")
    methods = grid(html)
    assert {"1001", "1006", "1025", "sbx_card"} <= methods
    # Only routable methods show (spec: `routable` decides visibility).
    assert not {"1013", "1017", "1018", "1030"} & methods


async def test_production_grid_has_no_sandbox_methods(api: Api) -> None:
    session = await new_session(api, KEYS.live_sk, country="BR")
    _, html, _ = await call(api, "GET", f"/checkout/{session['sessionId']}")
    assert grid(html) == {"1006", "1007", "1008", "1009"}


async def test_grid_shows_local_amounts_and_greys_out_methods_outside_limits(api: Api) -> None:
    session = await new_session(api, amount=50, country="US")
    _, html, _ = await call(api, "GET", f"/checkout/{session['sessionId']}")
    assert 'id="amount-1025" data-amount="50.00" data-currency="USD">$50.00 <small>USD' in html
    # Wire transfers start at 100 USD: shown, disabled, with the reason.
    assert re.search(r'id="method-1029"\s+disabled', html)
    assert 'id="unavailable-1029"' in html
    mexico = await new_session(api, amount=50, country="MX")
    _, html, _ = await call(api, "GET", f"/checkout/{mexico['sessionId']}")
    # 50 USD at 17.10, in Mexican Spanish.
    assert 'id="amount-1001" data-amount="855.00" data-currency="MXN">$855.00 <small>MXN' in html


# -- read ------------------------------------------------------------------------------------


async def test_read_shows_every_field(api: Api) -> None:
    session = await new_session(
        api,
        customer={**CUSTOMER, "documentId": CPF},
        country="BR",
        returnUrl=RETURN_URL,
        merchantOrderId="order-42",
    )
    token = session["sessionId"]
    data = await read(api, token)
    assert set(data) == READ_FIELDS
    assert data["token"] == token and data["sessionId"] == token
    assert {k: data[k] for k in CREATE_FIELDS} == session
    assert data["customer"] == {**CUSTOMER, "documentId": "*******4725"}
    assert data["customerIp"] is None and data["completedTxId"] is None
    assert data["returnUrl"] == RETURN_URL


@pytest.mark.parametrize("token", ["cs_unknown", "nope", "cs_" + "x" * 100])
async def test_unknown_token_is_not_found(api: Api, token: str) -> None:
    status, data, _ = await call(api, "GET", f"/checkout/sessions/{token}")
    assert_error(status, data, 404, "checkout_session_not_found")
    status, data, _ = await select(api, token, "1001")
    assert_error(status, data, 404, "checkout_session_not_found")


async def test_a_transaction_id_is_not_a_session_token(api: Api) -> None:
    tx = await api.pay()
    status, data, _ = await call(api, "GET", f"/checkout/sessions/{tx['transactionId']}")
    assert_error(status, data, 404, "checkout_session_not_found")


# -- expiry ----------------------------------------------------------------------------------


async def test_session_lives_24_hours_on_the_simulated_clock(api: Api) -> None:
    token = (await new_session(api))["sessionId"]
    await api.advance(DAY - 60)
    assert (await read(api, token))["status"] == "awaiting_method"
    await api.advance(61)
    status, data, _ = await call(api, "GET", f"/checkout/sessions/{token}")
    assert_error(status, data, 404, "checkout_session_not_found")
    status, data, _ = await select(api, token, "1001")
    assert_error(status, data, 404, "checkout_session_not_found")
    status, html, response = await call(api, "GET", f"/checkout/{token}")
    assert status == 404 and response.content_type == "text/html"
    assert "This checkout link is not available" in html
    # The expiry job frees the record too.
    assert api.client.app[CHECKOUT].sessions.get(token) is None


async def test_completed_session_also_expires(api: Api) -> None:
    token = (await new_session(api))["sessionId"]
    status, body, _ = await select(api, token, "1001")
    assert status == 200, body
    await api.advance(DAY + 1)
    status, data, _ = await select(api, token, "1001")
    assert_error(status, data, 404, "checkout_session_not_found")
    # The transaction outlives the session.
    status, html, _ = await call(api, "GET", f"/c/{body['transactionId']}")
    assert status == 200 and 'id="instructions"' in html


# -- the buyer's IP --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        # The last X-Forwarded-For entry is the one our edge wrote; earlier ones are the client's.
        (
            {"X-Forwarded-For": "203.0.113.9, 198.51.100.7", "X-Real-IP": "192.0.2.1"},
            "198.51.100.7",
        ),
        ({"X-Forwarded-For": "198.51.100.7"}, "198.51.100.7"),
        ({"X-Forwarded-For": "1.1.1.1, unknown", "X-Real-IP": "192.0.2.1"}, "192.0.2.1"),
        ({"X-Real-IP": "192.0.2.1"}, "192.0.2.1"),
        ({"X-Forwarded-For": "2001:db8::1"}, "2001:db8::1"),
        ({"X-Real-IP": "not-an-ip"}, "127.0.0.1"),
        ({}, "127.0.0.1"),
    ],
)
async def test_customer_ip_is_taken_when_the_buyer_opens_the_page(
    api: Api, headers: dict[str, str], expected: str
) -> None:
    token = (await new_session(api))["sessionId"]
    status, _, _ = await call(api, "GET", f"/checkout/{token}", headers=headers)
    assert status == 200
    assert (await read(api, token))["customerIp"] == expected


def test_buyer_ip_order() -> None:
    assert buyer_ip("10.0.0.1, 10.0.0.2 ", "10.0.0.3", "10.0.0.4") == "10.0.0.2"
    assert buyer_ip(None, None, "10.0.0.4") == "10.0.0.4"
    assert buyer_ip("", " 10.0.0.3 ", None) == "10.0.0.3"
    assert buyer_ip(None, None, None) is None


async def test_customer_ip_is_forwarded_as_user_ip(api: Api) -> None:
    token = (await new_session(api))["sessionId"]
    await call(api, "GET", f"/checkout/{token}", headers={"X-Forwarded-For": "198.51.100.7"})
    # The select request itself comes from elsewhere: the page visit's address is kept.
    status, body, _ = await select(api, token, "1001")
    assert status == 200, body
    assert stored_tx(api, body["transactionId"])["userIp"] == "198.51.100.7"


async def test_latest_visit_wins_until_a_method_is_picked(api: Api) -> None:
    token = (await new_session(api))["sessionId"]
    for ip in ("198.51.100.7", "198.51.100.8"):
        await call(api, "GET", f"/checkout/{token}", headers={"X-Real-IP": ip})
    assert (await read(api, token))["customerIp"] == "198.51.100.8"
    status, _, _ = await select(api, token, "1001")
    assert status == 200
    await call(api, "GET", f"/checkout/{token}", headers={"X-Real-IP": "198.51.100.9"})
    assert (await read(api, token))["customerIp"] == "198.51.100.8"


async def test_the_integrators_ip_is_not_the_buyers(api: Api) -> None:
    payload = {"amount": 50, "customer": CUSTOMER}
    status, session, _ = await call(
        api,
        "POST",
        "/checkout/sessions",
        KEYS.sandbox_sk,
        json=payload,
        headers={"X-Forwarded-For": "203.0.113.50"},
    )
    assert status == 200
    assert (await read(api, session["sessionId"]))["customerIp"] is None


async def test_select_without_a_page_visit_takes_the_select_callers_ip(api: Api) -> None:
    token = (await new_session(api))["sessionId"]
    status, body, _ = await call(
        api,
        "POST",
        f"/checkout/sessions/{token}/select",
        json={"paymentMethodId": "1001"},
        headers={"X-Real-IP": "192.0.2.44"},
    )
    assert status == 200, body
    assert (await read(api, token))["customerIp"] == "192.0.2.44"
    assert stored_tx(api, body["transactionId"])["userIp"] == "192.0.2.44"


# -- select ----------------------------------------------------------------------------------


async def test_select_creates_the_pending_transaction_and_locks_the_session(api: Api) -> None:
    session = await new_session(api, country="MX", returnUrl=RETURN_URL, merchantOrderId="order-42")
    token = session["sessionId"]
    status, body, _ = await select(api, token, "1001")
    assert status == 200, body
    assert set(body) == {"sessionId", "transactionId", "checkoutUrl", "status"}
    tx_id = body["transactionId"]
    assert body["sessionId"] == token and body["status"] == "pending"
    assert body["checkoutUrl"] == f"{origin(api)}/c/{tx_id}?returnUrl={quote(RETURN_URL, safe='')}"
    data = await read(api, token)
    assert (data["status"], data["completedTxId"]) == ("completed", tx_id)
    status, tx, _ = await call(api, "GET", f"/payments/{tx_id}", KEYS.sandbox_sk)
    assert status == 200, tx
    assert tx["status"] == "pending" and tx["paymentMethodId"] == "1001"
    assert tx["amount"] == 50 and tx["currencyLocal"] == "MXN"
    assert tx["merchantOrderId"] == "order-42"
    assert tx["userEmail"] == "ana@example.com"
    assert tx["paymentData"]["clabe"]
    record = stored_tx(api, tx_id)
    assert record["userName"] == "Ana Souza"
    assert record["userPhone"] == "+5511987654321"
    assert record["returnUrl"] == RETURN_URL


async def test_second_select_is_a_conflict_naming_the_first_transaction(api: Api) -> None:
    token = (await new_session(api))["sessionId"]
    status, first, _ = await select(api, token, "1001")
    assert status == 200
    for method_id in ("1001", "1002"):
        status, data, _ = await select(api, token, method_id)
        error = assert_error(status, data, 409, "checkout_session_already_completed")
        assert error["details"]["existingTxId"] == first["transactionId"]
    status, page, _ = await call(api, "GET", "/payments", KEYS.sandbox_sk)
    assert page["pagination"]["total"] == 1


async def test_select_customer_overrides_the_session_customer(api: Api) -> None:
    token = (await new_session(api))["sessionId"]
    status, body, _ = await select(
        api, token, "1001", customer={"email": " buyer@example.org ", "fullName": "Ana M. Souza"}
    )
    assert status == 200, body
    record = stored_tx(api, body["transactionId"])
    assert (record["userEmail"], record["userName"]) == ("buyer@example.org", "Ana M. Souza")


@pytest.mark.parametrize(
    ("body", "path", "missing"),
    [
        ({}, "paymentMethodId", True),
        ({"paymentMethodId": "  "}, "paymentMethodId", True),
        ({"paymentMethodId": 1001}, "paymentMethodId", False),
        ({"paymentMethodId": "1001", "customer": {"email": "nope"}}, "customer.email", False),
        ({"paymentMethodId": "1001", "customer": {"fullName": "Ana"}}, "customer.fullName", False),
        ({"paymentMethodId": "1001", "customer": {"phone": "1"}}, "customer.phone", False),
        ({"paymentMethodId": "1001", "customer": []}, "customer", False),
        ({"paymentMethodId": "1001", "amount": 10}, "amount", False),
    ],
)
async def test_select_body_validation(
    api: Api, body: dict[str, Any], path: str, missing: bool
) -> None:
    token = (await new_session(api))["sessionId"]
    status, data, _ = await call(api, "POST", f"/checkout/sessions/{token}/select", json=body)
    details = assert_error(status, data, 400, "invalid_request")["details"]
    assert [issue["path"] for issue in details["issues"]] == [path]
    assert details["missingFields"] == ([path] if missing else [])
    assert details["helpUrl"].startswith(f"{origin(api)}/api/v1/openapi.json#/paths/")
    assert token not in details["helpUrl"]  # the help link never carries the secret token
    assert (await read(api, token))["status"] == "awaiting_method"


@pytest.mark.parametrize(
    ("key", "method_id"),
    [
        (KEYS.restricted_sk, "1001"),  # SPEI is not enabled for shp_lverde_loja
        (KEYS.sandbox_sk, "9999"),  # no such method
        (KEYS.live_sk, "sbx_card"),  # sandbox built-ins are not in a production listing
    ],
)
async def test_method_outside_the_shops_listing_is_403(api: Api, key: str, method_id: str) -> None:
    token = (await new_session(api, key))["sessionId"]
    status, data, _ = await select(api, token, method_id)
    error = assert_error(status, data, 403, "method_not_enabled_for_shop")
    assert error["param"] == "paymentMethodId"
    assert (await read(api, token))["status"] == "awaiting_method"


async def test_method_outside_the_sessions_country_is_refused(api: Api) -> None:
    token = (await new_session(api, country="BR"))["sessionId"]
    status, data, _ = await select(api, token, "1001")
    issues = assert_error(status, data, 400, "invalid_request")["details"]["issues"]
    assert issues[0]["path"] == "paymentMethodId"


async def test_amount_out_of_limits_leaves_the_session_open(api: Api) -> None:
    # 600 USD = 10,260 MXN, over the convenience-store voucher's 10,000 MXN cap.
    token = (await new_session(api, amount=600, country="MX"))["sessionId"]
    status, data, _ = await select(api, token, "1003")
    error = assert_error(status, data, 422, "amount_out_of_limits")
    assert error["details"]["limit"]["max"] == 10000
    assert error["details"]["boundViolated"] == "max"
    assert (await read(api, token))["status"] == "awaiting_method"
    status, body, _ = await select(api, token, "1001")
    assert status == 200, body


async def test_production_decline_is_cascade_exhausted(api: Api) -> None:
    # 1014 (Argentine cards): its only provider declines in production.
    token = (await new_session(api, KEYS.live_sk, customer={**CUSTOMER, "documentId": DNI_AR}))[
        "sessionId"
    ]
    status, data, _ = await select(api, token, "1014")
    error = assert_error(status, data, 422, "cascade_exhausted")
    assert error["details"]["paymentMethodEnabledForShop"] is True
    assert (await read(api, token))["status"] == "awaiting_method"


async def test_rail_needing_a_document_asks_for_it(api: Api) -> None:
    token = (await new_session(api, country="BR"))["sessionId"]
    status, data, _ = await select(api, token, "1006")
    error = assert_error(status, data, 422, "missing_required_fields")
    assert [f["key"] for f in error["details"]["missingFields"]] == ["documentId"]
    status, body, _ = await select(api, token, "1006", customer={"documentId": CPF})
    assert status == 200, body


async def test_the_document_is_not_kept_after_it_was_forwarded(api: Api) -> None:
    token = (await new_session(api, customer={**CUSTOMER, "documentId": CPF}))["sessionId"]
    status, _, _ = await select(api, token, "1006")
    assert status == 200
    assert (await read(api, token))["customer"]["documentId"] is None
    assert CPF not in str(api.client.app[CHECKOUT].sessions.get(token))


# -- one-shot mode ---------------------------------------------------------------------------

BUYER = {"userName": "Ana Souza", "userEmail": "ana@example.com", "documentId": RFC}


async def one_shot(api: Api, key: str = KEYS.sandbox_sk, **body: Any) -> tuple[int, Any, Any]:
    return await call(
        api,
        "POST",
        "/checkout/sessions",
        key,
        json={"amount": 50, "paymentMethodId": "1001", **body},
    )


async def test_one_shot_session_is_the_transaction(api: Api) -> None:
    status, session, _ = await one_shot(api, returnUrl=RETURN_URL, **BUYER)
    assert status == 200, session
    assert set(session) == ONE_SHOT_FIELDS
    tx_id = session["sessionId"]
    assert tx_id.startswith("TXN-")
    assert session["checkoutUrl"] == (
        f"{origin(api)}/c/{tx_id}?returnUrl={quote(RETURN_URL, safe='')}"
    )
    assert session["status"] == "pending" and session["paymentMethodId"] == "1001"
    assert (session["amountLocal"], session["currencyLocal"]) == (855, "MXN")
    status, tx, _ = await call(api, "GET", f"/payments/{tx_id}", KEYS.sandbox_sk)
    assert status == 200 and tx["checkoutUrl"] == session["checkoutUrl"]


async def test_one_shot_loose_fields_win_and_the_block_fills_gaps(api: Api) -> None:
    status, session, _ = await one_shot(
        api,
        userEmail="loose@example.com",
        customer={
            "firstName": "Bia",
            "lastName": "Lima",
            "email": "block@example.com",
            "phone": "+525512345678",
            "documentId": RFC,
        },
    )
    assert status == 200, session
    record = stored_tx(api, session["sessionId"])
    assert record["userEmail"] == "loose@example.com"  # loose wins
    assert record["userName"] == "Bia Lima"  # the block fills what is missing
    assert record["userPhone"] == "+525512345678"


async def test_one_shot_malformed_block_value_is_not_promoted(api: Api) -> None:
    status, data, _ = await one_shot(
        api, userName="Ana Souza", documentId=RFC, customer={"email": "not-an-email"}
    )
    error = assert_error(status, data, 422, "missing_required_fields")
    assert [f["key"] for f in error["details"]["missingFields"]] == ["email"]
    status, page, _ = await call(api, "GET", "/payments", KEYS.sandbox_sk)
    assert page["pagination"]["total"] == 0


async def test_one_shot_requires_name_email_and_document(api: Api) -> None:
    status, data, _ = await one_shot(api)
    error = assert_error(status, data, 422, "missing_required_fields")
    keys = {f["key"] for f in error["details"]["missingFields"]}
    assert keys == {"userName", "email", "documentId"}
    status, data, _ = await one_shot(api, **{**BUYER, "userName": "Ana"})
    error = assert_error(status, data, 422, "missing_required_fields")
    assert [f["key"] for f in error["details"]["malformedFields"]] == ["userName"]


async def test_one_shot_method_outside_the_listing_is_403(api: Api) -> None:
    status, data, _ = await one_shot(api, KEYS.restricted_sk, **BUYER)
    assert_error(status, data, 403, "method_not_enabled_for_shop")


async def test_one_shot_body_errors_use_the_checkout_shape(api: Api) -> None:
    status, data, _ = await call(
        api, "POST", "/checkout/sessions", KEYS.sandbox_sk, json={"paymentMethodId": "1001"}
    )
    details = assert_error(status, data, 400, "invalid_request")["details"]
    assert details["missingFields"] == ["amount"]
    assert details["helpUrl"].endswith("#/paths/~1checkout~1sessions/post")
    status, data, _ = await one_shot(api, tag9="x")
    details = assert_error(status, data, 400, "invalid_request")["details"]
    assert details["issues"] == [{"path": "tag9", "message": "unknown field"}]


async def test_one_shot_does_not_take_the_integrators_ip(api: Api) -> None:
    status, session, _ = await call(
        api,
        "POST",
        "/checkout/sessions",
        KEYS.sandbox_sk,
        json={"amount": 50, "paymentMethodId": "1001", **BUYER},
        headers={"X-Forwarded-For": "203.0.113.50"},
    )
    assert status == 200
    assert stored_tx(api, session["sessionId"])["userIp"] is None


async def test_payments_hosted_checkout_gives_a_working_checkout_url(api: Api) -> None:
    buyer = {**BUYER, "documentId": "123456789"}  # a US document is 9 digits
    tx = await api.pay(paymentMethodId="1025", hostedCheckout=True, returnUrl=RETURN_URL, **buyer)
    url = urlsplit(tx["checkoutUrl"])
    assert url.path == f"/c/{tx['transactionId']}"
    status, _, response = await call(api, "GET", f"{url.path}?{url.query}")
    assert status == 307
    assert response.headers["Location"] == tx["paymentFormUrl"]


# -- pages -----------------------------------------------------------------------------------


async def test_picker_page_is_html_with_stable_ids_and_strict_headers(api: Api) -> None:
    token = (await new_session(api, country="BR", returnUrl=RETURN_URL))["sessionId"]
    status, html, response = await call(api, "GET", f"/checkout/{token}")
    assert status == 200 and response.content_type == "text/html"
    csp = response.headers["Content-Security-Policy"]
    # One script may run: the page's own, by the nonce this response carries.
    nonce = re.fullmatch(r".*script-src 'nonce-([A-Za-z0-9_-]{24})';.*", csp)
    assert "default-src 'none'" in csp and nonce and "unsafe-inline" not in csp
    assert "style-src 'self'" in csp and "connect-src 'self'" in csp
    assert response.headers["Referrer-Policy"] == "no-referrer"
    assert response.headers["Cache-Control"] == "no-store"
    for element in ('id="method-1006"', 'id="amount-1006"', 'id="customer-name"', 'id="cancel"'):
        assert element in html
    assert f'action="/checkout/{token}/select"' in html
    assert 'src="/static/icons/pix.svg"' in html
    scripts = re.findall(r"<script[^>]*>", html)
    assert scripts == [f'<script nonce="{nonce[1]}" src="/static/checkout.js" defer>']
    # A second visit gets another nonce.
    _, _, again = await call(api, "GET", f"/checkout/{token}")
    assert again.headers["Content-Security-Policy"] != csp


async def test_user_supplied_strings_are_escaped(api: Api) -> None:
    evil = {**CUSTOMER, "firstName": "<script>alert(1)</script>", "lastName": '"><img src=x>'}
    token = (await new_session(api, customer=evil, returnUrl="https://x.example/?a=1&b=<2>"))[
        "sessionId"
    ]
    _, html, _ = await call(api, "GET", f"/checkout/{token}")
    assert "<script>alert(1)</script>" not in html and "<img src=x>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &quot;&gt;&lt;img src=x&gt;" in html
    assert 'href="https://x.example/?a=1&amp;b=&lt;2&gt;"' in html


async def test_page_select_redirects_to_the_payment_page(api: Api) -> None:
    token = (await new_session(api, country="MX"))["sessionId"]
    status, _, response = await call(
        api, "POST", f"/checkout/{token}/select", data={"paymentMethodId": "1001"}
    )
    assert status == 303
    tx_id = (await read(api, token))["completedTxId"]
    assert response.headers["Location"] == f"/c/{tx_id}"
    status, html, _ = await call(api, "GET", f"/c/{tx_id}")
    tx = stored_tx(api, tx_id)
    assert status == 200
    assert f'id="clabe">{tx["paymentData"]["clabe"]}<' in html
    assert f'id="reference">{tx["paymentData"]["reference"]}<' in html
    assert 'id="due-date"' in html
    # Revisiting the completed session goes to the payment; so does a second form post.
    status, _, response = await call(api, "GET", f"/checkout/{token}")
    assert status == 303 and response.headers["Location"] == f"/c/{tx_id}"
    status, _, response = await call(
        api, "POST", f"/checkout/{token}/select", data={"paymentMethodId": "1002"}
    )
    assert status == 303 and response.headers["Location"] == f"/c/{tx_id}"


async def test_page_asks_for_missing_buyer_data_then_selects(api: Api) -> None:
    token = (await new_session(api, country="BR"))["sessionId"]
    _, html, _ = await call(api, "GET", f"/checkout/{token}")
    assert 'id="needs-1006">Pede: CPF<' in html  # a Brazilian session: in Portuguese
    status, html, _ = await call(
        api, "POST", f"/checkout/{token}/select", data={"paymentMethodId": "1006"}
    )
    assert status == 422 and 'id="details-form"' in html
    assert 'name="documentId"' in html and 'value="1006"' in html
    # A wrong CPF comes back with what the buyer typed, still asking.
    status, html, _ = await call(
        api,
        "POST",
        f"/checkout/{token}/select",
        data={"paymentMethodId": "1006", "documentId": "11111111111"},
    )
    assert status == 422 and 'value="11111111111"' in html
    assert "um valor não é válido" in html
    status, _, response = await call(
        api,
        "POST",
        f"/checkout/{token}/select",
        data={"paymentMethodId": "1006", "documentId": CPF},
    )
    assert status == 303 and response.headers["Location"].startswith("/c/TXN-")


async def test_page_select_errors_are_pages_with_a_way_back(api: Api) -> None:
    token = (await new_session(api, amount=600, country="MX"))["sessionId"]
    status, html, response = await call(
        api, "POST", f"/checkout/{token}/select", data={"paymentMethodId": "1003"}
    )
    assert status == 422 and response.content_type == "text/html"
    assert 'data-error-code="amount_out_of_limits"' in html
    assert f'id="back" href="/checkout/{token}"' in html


@pytest.mark.parametrize(
    "path", ["/checkout/cs_missing", "/checkout/cs_missing/select", "/c/TXN-NOPE"]
)
async def test_unknown_links_get_a_friendly_404_page(api: Api, path: str) -> None:
    method = "POST" if path.endswith("/select") else "GET"
    status, html, response = await call(
        api, method, path, data={"paymentMethodId": "1001"} if method == "POST" else None
    )
    assert status == 404 and response.content_type == "text/html"
    assert 'id="error-title"' in html and "Traceback" not in html


async def test_pix_page_shows_qr_code_copy_paste_and_due_date(api: Api) -> None:
    token = (await new_session(api, customer={**CUSTOMER, "documentId": CPF}))["sessionId"]
    status, body, _ = await select(api, token, "1006")
    assert status == 200
    data = stored_tx(api, body["transactionId"])["paymentData"]
    _, html, _ = await call(api, "GET", f"/c/{body['transactionId']}")
    assert re.search(r'<svg viewBox="[0-9 ]+" class="qr"><title>[^<]+</title>', html)
    # The code is shown whole, as text (a textarea cut it off on phones), with a copy button.
    assert f'<p class="code-block" id="pix-code">{data["qrCode"]}</p>' in html
    assert 'id="copy-pix-code" data-copy="pix-code"' in html
    assert f'datetime="{data["dueDate"]}"' in html


@pytest.mark.parametrize("method_id", ["1002", "1003", "1007"])
async def test_cash_and_boleto_pages_show_a_barcode(api: Api, method_id: str) -> None:
    status, session, _ = await one_shot(
        api,
        paymentMethodId=method_id,
        **{**BUYER, "documentId": CPF if method_id == "1007" else RFC},
    )
    assert status == 200, session
    _, html, _ = await call(api, "GET", f"/c/{session['sessionId']}")
    barcode = stored_tx(api, session["sessionId"])["paymentData"]["barcode"]
    assert (
        f'id="barcode">{barcode}<' in html
        and '<svg xmlns="http://www.w3.org/2000/svg" class="barcode"' in html
    )


async def test_payment_page_link_back_uses_the_stored_return_url(api: Api) -> None:
    status, session, _ = await one_shot(api, returnUrl=RETURN_URL, **BUYER)
    assert status == 200
    tampered = f"/c/{session['sessionId']}?returnUrl={quote('https://evil.example/', safe='')}"
    _, html, _ = await call(api, "GET", tampered)
    assert "evil.example" not in html
    assert 'id="return" href="https://shop.example/orders/42?from=checkout"' in html


async def test_closed_payment_page_shows_the_outcome(api: Api) -> None:
    tx = await api.pay()
    status, _, _ = await call(
        api,
        "POST",
        f"/payments/{tx['transactionId']}/simulate",
        KEYS.sandbox_sk,
        json={"action": "paid"},
    )
    assert status == 200
    _, html, _ = await call(api, "GET", f"/c/{tx['transactionId']}")
    assert 'data-status="completed"' in html and 'id="closed-message"' in html
    assert 'id="clabe"' not in html


# -- the simulated provider page -------------------------------------------------------------


async def hosted_tx(api: Api, **body: Any) -> str:
    token = (await new_session(api, **body))["sessionId"]
    status, data, _ = await select(api, token, "1025")
    assert status == 200, data
    return data["transactionId"]


@pytest.mark.parametrize(
    ("action", "final", "events"),
    [
        # What the simulate table fires for the transition each act drives.
        ("approve", "completed", list(SIMULATE_ACTIONS["paid"].events)),
        ("decline", "failed", list(SIMULATE_ACTIONS["failed"].events)),
        ("abandon", "expired", list(SIMULATE_ACTIONS["expired"].events)),
    ],
)
async def test_provider_actions_drive_simulate_transitions_and_return(
    api: Api, action: str, final: str, events: list[str]
) -> None:
    tx_id = await hosted_tx(api, returnUrl=RETURN_URL)
    status, _, response = await call(api, "GET", f"/c/{tx_id}")
    assert status == 307
    assert response.headers["Location"] == f"{origin(api)}/_sim/provider/{tx_id}"
    status, html, _ = await call(api, "GET", f"/_sim/provider/{tx_id}")
    assert status == 200 and all(f'id="{a}"' in html for a in ("approve", "decline", "abandon"))
    status, _, response = await call(api, "POST", f"/_sim/provider/{tx_id}/{action}")
    assert status == 303 and response.headers["Location"] == RETURN_URL
    status, tx, _ = await call(api, "GET", f"/payments/{tx_id}", KEYS.sandbox_sk)
    assert tx["status"] == final
    fired = [
        e["type"]
        for e in api.client.app[STORE].table("events").values()
        if e["data"].get("id") == tx_id
    ]
    assert fired == events
    # A second act (double click, back button) changes nothing.
    other = "decline" if action == "approve" else "approve"
    status, _, _ = await call(api, "POST", f"/_sim/provider/{tx_id}/{other}")
    assert status == 303
    assert stored_tx(api, tx_id)["status"] == final


async def test_provider_page_without_return_url_shows_the_result(api: Api) -> None:
    tx_id = await hosted_tx(api)
    status, _, response = await call(api, "POST", f"/_sim/provider/{tx_id}/approve")
    assert status == 303 and response.headers["Location"] == f"/_sim/provider/{tx_id}"
    _, html, _ = await call(api, "GET", f"/_sim/provider/{tx_id}")
    assert 'data-status="completed"' in html and 'id="done"' in html
    assert 'id="approve"' not in html


@pytest.mark.parametrize(
    "path", ["/_sim/provider/TXN-NOPE", "/_sim/provider/{direct}", "/_sim/provider/{hosted}/pay"]
)
async def test_provider_page_unknowns_are_friendly_404s(api: Api, path: str) -> None:
    direct = (await api.pay())["transactionId"]
    hosted = await hosted_tx(api)
    path = path.format(direct=direct, hosted=hosted)
    method = "POST" if path.endswith("/pay") else "GET"
    status, html, response = await call(api, method, path)
    assert status == 404 and response.content_type == "text/html"
    assert 'id="error-title"' in html


# -- payment codes ---------------------------------------------------------------------------

ITF_DIGITS = {
    "NNWWN": "0",
    "WNNNW": "1",
    "NWNNW": "2",
    "WWNNN": "3",
    "NNWNW": "4",
    "WNWNN": "5",
    "NWWNN": "6",
    "NNNWW": "7",
    "WNNWN": "8",
    "NWNWN": "9",
}


def decode_itf(svg: str) -> str:
    """Read an ITF barcode back from the SVG's bars, as a scanner would."""
    bars = [(int(x), int(w)) for x, w in re.findall(r'<rect x="(\d+)" y="0" width="(\d+)"', svg)]
    widths: list[int] = []
    for (x, w), nxt in zip(bars, [*bars[1:], None], strict=True):
        widths.append(w)
        if nxt is not None:
            widths.append(nxt[0] - x - w)  # the space up to the next bar
    assert widths[:4] == [1, 1, 1, 1] and widths[-3:] == [3, 1, 1]  # start and stop patterns
    body = widths[4:-3]
    digits = ""
    for i in range(0, len(body), 10):
        chunk = body[i : i + 10]
        digits += ITF_DIGITS["".join("W" if w == 3 else "N" for w in chunk[0::2])]
        digits += ITF_DIGITS["".join("W" if w == 3 else "N" for w in chunk[1::2])]
    return digits


@pytest.mark.parametrize("digits", ["12708663003253", "0123456789", "12345"])
def test_itf_barcode_round_trips(digits: str) -> None:
    decoded = decode_itf(itf_svg(digits, "t"))
    assert decoded == digits.rjust(len(digits) + len(digits) % 2, "0")


def test_boleto_barcode_is_the_febraban_44_digits() -> None:
    from datetime import date
    from random import Random

    line = boleto_line(Random(7), Decimal("252.50"), date(2026, 11, 25))
    barcode = boleto_barcode_digits(line)
    assert len(barcode) == 44 and barcode[:4] == line[:4]
    assert barcode[4] == _boleto_general_check_digit(barcode[:4] + barcode[5:])
    assert barcode[5:19] == line[33:47]  # due factor, then the amount in cents
    assert barcode[9:19] == "0000025250"


def test_qr_svg_is_inline_and_scalable() -> None:
    svg = qr_svg("00020126", "Pix QR code")
    assert svg.startswith("<svg") and "viewBox" in svg and 'width="' not in svg.split(">")[0]
