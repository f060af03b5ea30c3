"""POST /payments (and its /transactions alias) through the HTTP API, against api-spec.txt.

Covers the success shape, the per-rail instructions, presentment FX, every limit, the validation
errors, the production cascade outcomes of the fixtures and the legacy slug fallback. Every error
case also proves that nothing was created.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any
from urllib.parse import quote, urlsplit

import pytest

from payorch.vocabulary import PAYMENT_METHOD_SLUGS
from simulator.domain.documents import is_valid_clabe
from simulator.domain.instructions import (
    is_valid_boleto_line,
    is_valid_brcode,
    is_valid_oxxo_reference,
    is_valid_voucher_code,
    parse_emv,
)
from tests.conftest import Api, Keys, assert_error

KEYS = Keys()
RESTRICTED_LIVE_SK = "sk_live_srkvzw8alo0a6ns4631emvw9"  # shp_lverde_loja (lists sbx_pix, sbx_card)
CPF = "52998224725"  # valid check digits
RFC = "XAXX010101000"  # SAT's generic RFC, always valid
CC = "1020304050"
DNI_AR = "12345678"
CUIT_AR = "20-12345678-6"  # the same person's CUIT/CUIL, check digit valid
DNI_PE = "45678912"
PHONE_CO = "+573001234567"

# Fields a successful create answers with (spec: POST /payments, Response (success)).
CREATE_FIELDS = {
    "transactionId",
    "status",
    "amount",
    "currency",
    "amountLocal",
    "currencyLocal",
    "paymentMethodId",
    "paymentMethod",
    "paymentMethodName",
    "logoUrl",
    "iconUrl",
    "country",
    "fees",
    "settlement",
    "paymentFormUrl",
    "paymentData",
    "merchantOrderId",
    "tag1",
    "tag2",
    "tag3",
    "expiresAt",
}
TXN_ID = re.compile(r"^TXN-[A-Za-z0-9]+$")
RATES = {"MXN": Decimal("17.10"), "BRL": Decimal("5.05"), "CLP": Decimal("935")}
MARKUP = Decimal("0.98")


def cents(value: Decimal) -> Decimal:
    return value.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


def num(value: Any) -> Decimal:
    assert isinstance(value, (int, float)) and not isinstance(value, bool), value
    return Decimal(str(value))


def parse_iso(value: str) -> datetime:
    assert isinstance(value, str) and value.endswith("Z"), value
    return datetime.fromisoformat(value)


async def count(api: Api, key: str = KEYS.sandbox_sk) -> int:
    status, body, _ = await api.get("/payments", key)
    assert status == 200, body
    return body["pagination"]["total"]


async def create(
    api: Api, body: dict[str, Any], key: str = KEYS.sandbox_sk, path: str = "/payments"
) -> tuple[int, Any, Any]:
    return await api.post(path, key, json=body)


async def create_error(
    api: Api, body: dict[str, Any], http_status: int, code: str, key: str = KEYS.sandbox_sk
) -> dict[str, Any]:
    """The expected error, and proof that no transaction was created by it."""
    before = await count(api, key)
    status, data, _ = await create(api, body, key)
    error = assert_error(status, data, http_status, code)
    assert await count(api, key) == before
    return error


# -- the success shape ------------------------------------------------------------------------


@pytest.mark.real_wall_clock
async def test_success_has_every_create_field(api: Api) -> None:
    before = datetime.now(UTC)
    tx = await api.pay(merchantOrderId="ORD-1", tag1="a", tag2="b", tag3="c")
    assert set(tx) == CREATE_FIELDS
    assert TXN_ID.match(tx["transactionId"])
    assert tx["status"] == "pending"
    assert num(tx["amount"]) == 50 and tx["currency"] == "USD"
    assert num(tx["amountLocal"]) == Decimal("855.00") and tx["currencyLocal"] == "MXN"
    assert tx["paymentMethodId"] == "1001" and tx["paymentMethod"] == "spei"
    assert tx["paymentMethodName"] == "SPEI"
    assert tx["country"] == "MEX"
    # Mercado Azul: platform 3.5 %; SPEI: 1.5 % + 0.30; no card network fee; reserve 5 %.
    fees = tx["fees"]
    assert set(fees) == {"platform", "provider", "network", "total"}
    assert num(fees["platform"]) == Decimal("1.75")
    assert num(fees["provider"]) == Decimal("1.05")
    assert num(fees["network"]) == 0
    assert num(fees["total"]) == num(fees["platform"]) + num(fees["provider"]) + num(
        fees["network"]
    )
    assert tx["settlement"] == {
        "type": "delayed",
        "delay": "T+2",
        "reserve": 2.5,
        "status": "pending",
    }
    assert tx["paymentFormUrl"] is None
    assert tx["merchantOrderId"] == "ORD-1"
    assert (tx["tag1"], tx["tag2"], tx["tag3"]) == ("a", "b", "c")
    expires = parse_iso(tx["expiresAt"])
    assert before < expires < before + timedelta(days=1)


async def test_defaults_echo_nulls_for_unsent_optional_fields(api: Api) -> None:
    tx = await api.pay()
    assert tx["merchantOrderId"] is None
    assert (tx["tag1"], tx["tag2"], tx["tag3"]) == (None, None, None)
    assert "inputCurrency" not in tx and "inputAmount" not in tx
    assert "checkoutUrl" not in tx


async def test_icon_urls_are_absolute_equal_and_fetchable(api: Api) -> None:
    for method_id in ("1001", "1005"):  # a custom logo, and the generic category icon
        tx = await api.pay(paymentMethodId=method_id)
        assert tx["logoUrl"] == tx["iconUrl"]
        url = urlsplit(tx["iconUrl"])
        assert url.scheme in ("http", "https") and url.netloc, tx["iconUrl"]
        response = await api.client.get(url.path)
        assert response.status == 200, tx["iconUrl"]
        assert "svg" in response.headers["Content-Type"]


async def test_internal_routing_is_not_exposed(api: Api, keys: Keys) -> None:
    # The provider that processed the charge and the cascade trace are not exposed.
    status, _, response = await create(api, {"amount": 50, "paymentMethodId": "1004"}, keys.live_sk)
    assert status == 200
    text = await response.text()
    assert "prv_" not in text and "providerId" not in text
    for leak in ("provider", "providerId", "attempts", "userIp", "documentId", "merchantId"):
        assert leak not in (await response.json())


# -- per-rail payment data --------------------------------------------------------------------


@pytest.mark.real_wall_clock
async def test_spei_gives_a_valid_clabe_reference_and_due_date(api: Api) -> None:
    created = datetime.now(UTC)
    tx = await api.pay()
    data = tx["paymentData"]
    assert data["method"] == "spei"
    assert is_valid_clabe(data["clabe"]), data
    assert re.fullmatch(r"[0-9]+", data["reference"]), data
    due = parse_iso(data["dueDate"])
    # SPEI stays payable 72 hours; the placeholder expiresAt is not the deadline.
    assert abs(due - (created + timedelta(hours=72))) < timedelta(minutes=1)
    assert tx["paymentFormUrl"] is None
    assert set(data) <= {
        "method",
        "clabe",
        "reference",
        "bankName",
        "beneficiaryName",
        "dueDate",
        "methodName",
    }


@pytest.mark.parametrize(
    ("body", "slug", "check"),
    [
        (
            {"paymentMethodId": "1002", "userEmail": "ana@example.mx"},
            "oxxo",
            is_valid_oxxo_reference,
        ),
        (
            {"paymentMethodId": "1003", "userEmail": "ana@example.mx"},
            "voucher",
            is_valid_voucher_code,
        ),
        ({"paymentMethodId": "1011", "documentId": CC}, "voucher", is_valid_voucher_code),
        ({"paymentMethodId": "sbx_cash", "userEmail": "ana@example.mx"}, "oxxo", None),
    ],
)
async def test_cash_rails_give_a_barcode(
    api: Api, body: dict[str, Any], slug: str, check: Any
) -> None:
    tx = await api.pay(**body)
    data = tx["paymentData"]
    assert data["method"] == slug == tx["paymentMethod"]
    assert data["barcode"] and data["dueDate"]
    if check is not None:
        assert check(data["barcode"]), data["barcode"]
    assert tx["paymentFormUrl"] is None


@pytest.mark.parametrize("currency", [None, "BRL"])
async def test_pix_gives_a_valid_brcode_for_the_local_amount(
    api: Api, currency: str | None
) -> None:
    body: dict[str, Any] = {"paymentMethodId": "1006", "documentId": CPF, "amount": 37.5}
    if currency:
        body["currency"] = currency
    tx = await api.pay(**body)
    data = tx["paymentData"]
    assert data["method"] == "pix"
    assert is_valid_brcode(data["qrCode"]), data["qrCode"]
    fields = parse_emv(data["qrCode"])
    assert fields["53"] == "986" and fields["58"] == "BR"
    assert Decimal(fields["54"]) == num(tx["amountLocal"])
    assert tx["currencyLocal"] == "BRL" and tx["paymentFormUrl"] is None
    assert data["dueDate"]


async def test_boleto_gives_a_valid_line_carrying_the_local_amount(api: Api) -> None:
    tx = await api.pay(paymentMethodId="1007", documentId=CPF, userName="Maria Silva", amount=20)
    line = tx["paymentData"]["barcode"]
    assert tx["paymentData"]["method"] == "boleto"
    assert is_valid_boleto_line(line), line
    # The last 10 digits of the line are the amount in centavos.
    assert Decimal(int(line[-10:])) / 100 == num(tx["amountLocal"]) == Decimal("101.00")


@pytest.mark.parametrize(
    "body",
    [
        {"paymentMethodId": "1004"},
        {"paymentMethodId": "1025"},
        {"paymentMethodId": "1010", "documentId": CC, "userPhone": PHONE_CO},
        {"paymentMethodId": "sbx_pse", "documentId": CC, "userPhone": PHONE_CO},
        {"paymentMethodId": "sbx_card"},
    ],
)
async def test_hosted_rails_give_a_fetchable_form_url(api: Api, body: dict[str, Any]) -> None:
    tx = await api.pay(**body)
    assert tx["paymentData"] == {"method": tx["paymentMethod"]}
    url = urlsplit(tx["paymentFormUrl"])
    assert url.scheme in ("http", "https") and url.netloc, tx["paymentFormUrl"]
    status, page, response = await api.get(url.path)
    assert status == 200
    assert response.headers["Content-Type"].startswith("text/html")
    assert tx["transactionId"] in page


@pytest.mark.parametrize(
    "body",
    [
        {"paymentMethodId": "1001"},
        {"paymentMethodId": "1016", "documentId": DNI_AR},
        {"paymentMethodId": "1022", "userEmail": "ana@example.pe"},
        {"paymentMethodId": "1029", "userName": "John Smith", "amount": 500},
    ],
)
async def test_direct_rails_have_no_form_url(api: Api, body: dict[str, Any]) -> None:
    tx = await api.pay(**body)
    assert tx["paymentFormUrl"] is None
    data = tx["paymentData"]
    assert data["method"] == tx["paymentMethod"] in PAYMENT_METHOD_SLUGS
    assert len(data) > 1, "a direct rail carries instructions beyond the slug"
    parse_iso(data["dueDate"])


# -- presentment currency -----------------------------------------------------------------------


async def test_presentment_currency_is_converted_with_the_markup(api: Api) -> None:
    tx = await api.pay(amount=100, currency="BRL")
    assert tx["currency"] == "USD"
    assert tx["inputCurrency"] == "BRL" and num(tx["inputAmount"]) == 100
    usd = cents(Decimal(100) / RATES["BRL"] * MARKUP)
    assert num(tx["amount"]) == usd == Decimal("19.41")
    assert tx["currencyLocal"] == "MXN"
    assert num(tx["amountLocal"]) == cents(usd * RATES["MXN"])
    # Fees are computed on the USD headline.
    assert num(tx["fees"]["platform"]) == cents(usd * Decimal("0.035"))


async def test_presentment_in_the_rail_currency_charges_exactly_the_input(api: Api) -> None:
    tx = await api.pay(amount=1234.5, currency="MXN")
    assert tx["inputCurrency"] == "MXN" and num(tx["inputAmount"]) == Decimal("1234.5")
    assert num(tx["amountLocal"]) == num(tx["inputAmount"])
    assert num(tx["amount"]) == cents(Decimal("1234.5") / RATES["MXN"] * MARKUP)


async def test_usd_or_no_currency_has_no_input_fields(api: Api) -> None:
    for currency in (None, "USD"):
        body: dict[str, Any] = {"amount": 20}
        if currency is not None:
            body["currency"] = currency
        tx = await api.pay(**body)
        assert tx["currency"] == "USD" and num(tx["amount"]) == 20, currency
        assert "inputCurrency" not in tx and "inputAmount" not in tx, currency
        assert num(tx["amountLocal"]) == Decimal("342.00"), currency


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("currency", ""),
        ("currency", "  "),
        ("currency", "usd"),
        ("currency", "Mxn"),
        ("currency", " USD "),
        ("country", ""),
        ("country", "   "),
    ],
)
async def test_a_blank_or_lower_case_currency_or_a_blank_country_is_invalid(
    api: Api, field: str, value: str
) -> None:
    """Only null (or leaving the field out) means the default; ISO-4217 codes are upper case."""
    body = {"amount": 20, "paymentMethodId": "1001", field: value}
    error = await create_error(api, body, 400, "invalid_request")
    assert error["param"] == field
    assert [issue["path"] for issue in error["details"]["issues"]] == [field]
    tx = await api.pay(amount=20, **{field: None})
    assert tx["currency"] == "USD" and tx["country"] == "MEX"


@pytest.mark.parametrize("value", ["", "   "])
async def test_a_blank_buyer_field_is_absent_and_a_blank_email_is_missing_where_needed(
    api: Api, value: str
) -> None:
    """The document's PaymentCreate rule: buyer text is trimmed and blank counts as absent (a
    form's empty e-mail box), unlike a code; an e-mail that is not one is refused."""
    fields = ("userName", "userEmail", "documentId", "userPhone", "userIp", "returnUrl")
    tx = await api.pay(**dict.fromkeys(fields, value))
    status, stored, _ = await api.get(f"/payments/{tx['transactionId']}", KEYS.sandbox_sk)
    assert status == 200 and stored["userEmail"] is None, stored
    error = await create_error(
        api, {"amount": 20, "paymentMethodId": "1001", "userEmail": "ana"}, 400, "invalid_request"
    )
    assert error["param"] == "userEmail"
    hosted = {"amount": 20, "paymentMethodId": "1001", "hostedCheckout": True}
    buyer = {"userName": "Ana Souza", "documentId": "XAXX010101000"}
    error = await create_error(
        api, {**hosted, **buyer, "userEmail": value}, 422, "missing_required_fields"
    )
    assert [field["key"] for field in error["details"]["missingFields"]] == ["email"]


async def test_currency_without_a_rate_is_fx_unavailable(api: Api) -> None:
    error = await create_error(
        api, {"amount": 5000, "currency": "JPY", "paymentMethodId": "1001"}, 422, "fx_unavailable"
    )
    assert error["details"]["currency"] == "JPY"


async def test_malformed_currency_is_invalid_request(api: Api) -> None:
    for currency in ("US", "DOLLARS", 840, "U$D", "BR L"):
        body = {"amount": 50, "currency": currency, "paymentMethodId": "1001"}
        error = await create_error(api, body, 400, "invalid_request")
        assert any(issue["path"] == "currency" for issue in error["details"]["issues"]), currency


# -- amount bounds ----------------------------------------------------------------------------


async def test_converted_charge_above_100k_usd_is_refused(api: Api) -> None:
    body = {"paymentMethodId": "1029", "userName": "John Smith"}
    error = await create_error(api, {**body, "amount": 100000.01}, 400, "amount_above_maximum")
    assert error["param"] == "amount"
    # The cap is on the converted USD headline: 95,000 EUR is about 101,196 USD.
    await create_error(
        api, {**body, "amount": 95000, "currency": "EUR"}, 400, "amount_above_maximum"
    )
    tx = await api.pay(**body, amount=100000)
    assert num(tx["amount"]) == 100000


async def test_absurd_amounts_are_a_clear_400(api: Api) -> None:
    # Beyond Decimal's precision these once overflowed while rounding: a 500, not the cap.
    for amount, currency in ((1e30, None), (10**29, None), (1e308, "BRL"), (1e26, "MXN")):
        body: dict[str, Any] = {"amount": amount, "paymentMethodId": "1029", "userName": "J S"}
        if currency:
            body["currency"] = currency
        status, data, _ = await create(api, body)
        assert status == 400, data
        assert data["error"]["code"] in ("amount_above_maximum", "amount_invalid")
        assert data["error"]["param"] == "amount"
    assert await count(api) == 0


async def test_the_cap_applies_to_the_amount_rounded_to_cents(api: Api) -> None:
    # A presentment amount's USD headline (MXN / 17.10 x 0.98) is rounded to cents, then capped:
    # 1,744,898.05 MXN is 100,000.0052 USD (100,000.01), 1,744,898.01 MXN 100,000.0029 (100,000).
    body = {"paymentMethodId": "1029", "userName": "John Smith", "currency": "MXN"}
    error = await create_error(api, {**body, "amount": 1744898.05}, 400, "amount_above_maximum")
    assert error["details"]["maxUsd"] == 100000
    tx = await api.pay(**body, amount=1744898.01)
    assert num(tx["amount"]) == 100000


async def test_local_bounds_give_amount_out_of_limits(api: Api) -> None:
    cases: list[tuple[float, str | None, str]] = [
        (0.05, None, "min"),  # 46.75 -> 47 CLP, below 100
        (99, "CLP", "min"),
        (6000, None, "max"),  # 5,610,000 CLP, above 5,000,000
        (5000001, "CLP", "max"),
    ]
    for amount, currency, bound in cases:
        body: dict[str, Any] = {"amount": amount, "paymentMethodId": "1019"}
        if currency:
            body["currency"] = currency
        error = await create_error(api, body, 422, "amount_out_of_limits")
        details = error["details"]
        assert details["limit"]["min"] == 100 and details["limit"]["max"] == 5000000
        assert details["boundViolated"] == bound, (amount, currency)


async def test_local_bounds_are_inclusive(api: Api) -> None:
    low = await api.pay(paymentMethodId="1019", amount=100, currency="CLP")
    assert num(low["amountLocal"]) == 100 and low["currencyLocal"] == "CLP"
    high = await api.pay(paymentMethodId="1019", amount=5000000, currency="CLP")
    assert num(high["amountLocal"]) == 5000000


async def test_usd_bounds_give_below_minimum_and_above_maximum(api: Api) -> None:
    error = await create_error(
        api, {"amount": 0.99, "paymentMethodId": "1001"}, 400, "amount_below_minimum"
    )
    assert error["param"] == "amount"
    error = await create_error(
        api, {"amount": 50000.01, "paymentMethodId": "1001"}, 400, "amount_above_maximum"
    )
    assert error["param"] == "amount"
    assert num((await api.pay(amount=1))["amount"]) == 1
    assert num((await api.pay(amount=50000))["amount"]) == 50000


async def test_missing_amount_is_missing_field(api: Api) -> None:
    error = await create_error(api, {"paymentMethodId": "1001"}, 400, "missing_field")
    assert error["param"] == "amount"
    error = await create_error(
        api, {"amount": None, "paymentMethodId": "1001"}, 400, "missing_field"
    )
    assert error["param"] == "amount"


async def test_non_positive_or_non_numeric_amount_is_invalid(api: Api) -> None:
    for amount in (0, -1, -0.01, "10", True, False, {}, [], {"value": 10}, "abc"):
        body = {"amount": amount, "paymentMethodId": "1001"}
        error = await create_error(api, body, 400, "amount_invalid")
        assert error["param"] == "amount", amount


@pytest.mark.parametrize(
    ("amount", "currency"),
    [(10.005, "USD"), (10.005, None), (1234.567, "MXN"), (5000.5, "CLP"), (1e-9, "USD")],
)
async def test_an_amount_finer_than_its_currency_is_refused_not_rounded(
    api: Api, amount: float, currency: str | None
) -> None:
    """The precision is the input currency's (CLP has none), never the rail's or USD's."""
    body: dict[str, Any] = {"amount": amount, "paymentMethodId": "1001"}
    if currency:
        body["currency"] = currency
    error = await create_error(api, body, 400, "amount_invalid")
    assert error["param"] == "amount"
    assert error["details"]["currency"] == (currency or "USD")
    # The same amount at the currency's own precision is a charge.
    assert (await api.pay(amount=50000, currency="CLP"))["inputAmount"] == 50000
    assert num((await api.pay(amount=10.01))["amount"]) == Decimal("10.01")


# -- method resolution and the cascade ----------------------------------------------------------


@pytest.mark.parametrize("body", [{"amount": 50}, {"amount": 50, "paymentMethodId": ""}])
async def test_missing_method_is_missing_field(api: Api, body: dict[str, Any]) -> None:
    error = await create_error(api, body, 400, "missing_field")
    assert error["param"] == "paymentMethodId"


async def test_codes_not_in_the_shop_listing_exhaust_the_cascade(api: Api, keys: Keys) -> None:
    cases = [
        ("9999", keys.sandbox_sk),  # unknown
        ("0001", keys.sandbox_sk),
        ("1001", keys.restricted_sk),  # not enabled for the restricted shop
        ("1010", keys.restricted_sk),
        ("sbx_pix", keys.live_sk),  # sandbox built-in in production
        ("sbx_card", keys.live_sk),
        ("sbx_nope", keys.sandbox_sk),
    ]
    for method_id, key in cases:
        body = {"amount": 50, "paymentMethodId": method_id, "documentId": CPF}
        error = await create_error(api, body, 422, "cascade_exhausted", key=key)
        assert error["details"]["reason"] == "no_provider_for_method_region", method_id
        assert error["details"]["paymentMethodEnabledForShop"] is False, method_id
        assert error["details"]["paymentMethodId"] == method_id
        # Where to look: the CLI's listing and the endpoint's.
        assert "`payorch methods`" in error["message"], method_id
        assert "GET /payment-methods" in error["message"], method_id
        unknown = method_id in ("9999", "0001", "sbx_nope")
        assert error["message"].startswith(
            f"No payment method has the id `{method_id}`"
            if unknown
            else f"Method `{method_id}` is not in your shop's listing"
        ), (method_id, error["message"])


async def test_restricted_shop_charges_its_own_methods(api: Api, keys: Keys) -> None:
    tx = await api.pay(keys.restricted_sk, paymentMethodId="1006", documentId=CPF)
    assert tx["paymentMethodId"] == "1006"


@pytest.mark.parametrize("document", [DNI_AR, CUIT_AR, "20123456786", "33693450239"])
async def test_argentina_takes_a_dni_a_cuit_or_a_cuil(api: Api, document: str) -> None:
    tx = await api.pay(paymentMethodId="1016", documentId=document)
    assert tx["country"] == "ARG"


async def test_argentina_refuses_a_cuit_with_a_wrong_check_digit(api: Api) -> None:
    body = {"amount": 50, "paymentMethodId": "1016", "documentId": "20-12345678-5"}
    error = await create_error(api, body, 422, "missing_required_fields")
    assert [f["key"] for f in error["details"]["malformedFields"]] == ["documentId"]


async def test_production_decline_exhausts_the_cascade(api: Api, keys: Keys) -> None:
    body = {"amount": 50, "paymentMethodId": "1014", "documentId": DNI_AR}
    error = await create_error(api, body, 422, "cascade_exhausted", key=keys.live_sk)
    assert error["details"]["reason"] == "no_provider_for_method_region"
    assert error["details"]["paymentMethodEnabledForShop"] is True
    assert error["details"]["paymentMethodId"] == "1014"


async def test_production_without_instructions_is_502(api: Api, keys: Keys) -> None:
    body = {
        "amount": 50,
        "paymentMethodId": "1021",
        "documentId": DNI_PE,
        "userEmail": "ana@example.pe",
    }
    error = await create_error(api, body, 502, "payment_instructions_unavailable", key=keys.live_sk)
    assert isinstance(error["details"]["provider"], str) and error["details"]["provider"]


async def test_production_outage_falls_through_to_the_next_provider(api: Api, keys: Keys) -> None:
    tx = await api.pay(keys.live_sk, paymentMethodId="1004")
    assert tx["status"] == "pending" and tx["paymentMethod"] == "card"
    assert tx["paymentFormUrl"] and tx["paymentData"] == {"method": "card"}
    assert await count(api, keys.live_sk) == 1


async def test_production_unroutable_method_exhausts_with_enabled_true(
    api: Api, keys: Keys
) -> None:
    body = {"amount": 50, "paymentMethodId": "1018", "userEmail": "ana@example.cl"}
    error = await create_error(api, body, 422, "cascade_exhausted", key=keys.live_sk)
    assert error["details"]["paymentMethodEnabledForShop"] is True
    assert error["details"]["reason"] == "no_provider_for_method_region"


@pytest.mark.parametrize(
    "body",
    [
        {"paymentMethodId": "1014", "documentId": DNI_AR},
        {"paymentMethodId": "1021", "documentId": DNI_PE, "userEmail": "ana@example.pe"},
        {"paymentMethodId": "1018", "userEmail": "ana@example.cl"},
    ],
)
async def test_sandbox_always_accepts(api: Api, body: dict[str, Any]) -> None:
    tx = await api.pay(**body)
    assert tx["status"] == "pending"
    assert tx["paymentFormUrl"] or len(tx["paymentData"]) > 1


# -- legacy slug and country --------------------------------------------------------------------


@pytest.mark.parametrize("country", ["MX", "MEX", "mx"])
async def test_legacy_slug_resolves_within_the_country(api: Api, country: str) -> None:
    status, tx, _ = await create(api, {"amount": 50, "paymentMethod": "spei", "country": country})
    assert status == 200, tx
    assert tx["paymentMethodId"] == "1001" and tx["country"] == "MEX"
    assert is_valid_clabe(tx["paymentData"]["clabe"])


async def test_payment_method_id_wins_over_the_slug(api: Api) -> None:
    tx = await api.pay(paymentMethod="pix")
    assert tx["paymentMethodId"] == "1001" and tx["paymentMethod"] == "spei"


async def test_unknown_slug_is_unsupported_method(api: Api) -> None:
    error = await create_error(
        api, {"amount": 50, "paymentMethod": "teleport", "country": "MX"}, 400, "unsupported_method"
    )
    assert error["param"] == "paymentMethod"


async def test_slug_outside_its_country_is_unsupported_country(api: Api) -> None:
    for country in ("BR", "USA", None):  # no country means USA
        body: dict[str, Any] = {"amount": 50, "paymentMethod": "spei"}
        if country:
            body["country"] = country
        await create_error(api, body, 400, "unsupported_country")


async def test_slug_of_a_method_not_enabled_for_the_shop_is_refused(api: Api, keys: Keys) -> None:
    # The restricted shop has no Mexican cash voucher, and no sandbox built-in is one.
    body = {"amount": 50, "paymentMethod": "voucher", "country": "MX"}
    await create_error(api, body, 400, "unsupported_method", key=keys.restricted_sk)


async def test_slug_picks_from_the_shop_listing(api: Api, keys: Keys) -> None:
    # The restricted shop lists no real SPEI; in sandbox its listing has the sbx_spei built-in.
    body = {"amount": 50, "paymentMethod": "spei", "country": "MX"}
    status, tx, _ = await create(api, body, keys.restricted_sk)
    assert status == 200, tx
    assert tx["paymentMethodId"] == "sbx_spei"
    # Real methods come before the built-ins of the same slug and country.
    tx = await api.pay(keys.restricted_sk, paymentMethod="card", country="US", paymentMethodId=None)
    assert tx["paymentMethodId"] == "1025"
    # Production never routes to a sandbox built-in, even one in the shop's own list.
    await create_error(api, body, 400, "unsupported_method", key=RESTRICTED_LIVE_SK)


async def test_country_iso2_and_iso3_are_normalised(api: Api) -> None:
    for country in ("MX", "MEX", "mex", "Mx"):
        tx = await api.pay(country=country)
        assert tx["country"] == "MEX", country


async def test_country_is_inferred_from_the_method(api: Api) -> None:
    tx = await api.pay(paymentMethodId="1006", documentId=CPF)
    assert tx["country"] == "BRA"


async def test_country_not_matching_the_method_is_unsupported(api: Api) -> None:
    for country in ("BR", "BRA", "US"):
        body = {"amount": 50, "paymentMethodId": "1001", "country": country}
        error = await create_error(api, body, 400, "unsupported_country")
        assert error["param"] == "country", country


async def test_unknown_country_code_is_invalid_request(api: Api) -> None:
    for country in ("XX", "ZZZ", "M", 52):
        body = {"amount": 50, "paymentMethodId": "1001", "country": country}
        await create_error(api, body, 400, "invalid_request")


@pytest.mark.parametrize(
    ("method_id", "country", "extra"),
    [
        ("sbx_spei", "BR", {}),
        ("sbx_card", "MX", {}),
        ("sbx_cash", "CO", {"userEmail": "ana@example.com"}),
        ("sbx_pse", "PE", {"documentId": CC, "userPhone": PHONE_CO}),
        ("sbx_pix", "MX", {"documentId": CPF}),
    ],
)
async def test_sandbox_built_ins_accept_any_country(
    api: Api, method_id: str, country: str, extra: dict[str, Any]
) -> None:
    status, tx, _ = await create(
        api, {"amount": 50, "paymentMethodId": method_id, "country": country, **extra}
    )
    assert status == 200, tx
    assert tx["paymentMethodId"] == method_id
    assert len(tx["country"]) == 3


async def test_merchant_and_shop_targeting_errors(api: Api, keys: Keys) -> None:
    cases: list[tuple[str, dict[str, Any], int, str]] = [
        (keys.sandbox_sk, {"merchantId": "mer_lojaverde"}, 403, "forbidden"),
        (keys.sandbox_sk, {"shopId": "shp_lverde_loja"}, 403, "forbidden"),
        (keys.legacy_sk, {}, 401, "shop_required"),
        (keys.legacy_sk, {"shopId": "shp_nope"}, 404, "shop_not_found"),
        (keys.legacy_sk, {"shopId": "shp_mazul_outlet"}, 403, "shop_suspended"),
        (keys.legacy_sk, {"shopId": "shp_mazul_app"}, 403, "environment_mismatch"),
    ]
    for key, extra, http_status, code in cases:
        body = {"amount": 50, "paymentMethodId": "1001", **extra}
        await create_error(api, body, http_status, code, key=key)


async def test_merchant_wide_key_charges_the_named_shop(api: Api, keys: Keys) -> None:
    tx = await api.pay(keys.legacy_sk, shopId="shp_mazul_tienda", merchantId="mer_mercadoazul")
    status, got, _ = await api.get(f"/payments/{tx['transactionId']}", keys.sandbox_sk)
    assert status == 200 and got["id"] == tx["transactionId"]


# -- buyer data -------------------------------------------------------------------------------


def assert_field_items(items: list[dict[str, Any]], keys: list[str]) -> None:
    assert [item["key"] for item in items] == keys, items
    for item in items:
        assert set(item) == {"key", "type", "label", "help"}, item
        assert all(isinstance(item[k], str) and item[k] for k in item), item


async def test_rail_needing_a_document_reports_it_missing(api: Api) -> None:
    error = await create_error(
        api, {"amount": 50, "paymentMethodId": "1006"}, 422, "missing_required_fields"
    )
    details = error["details"]
    assert details["reason"] == "missing"
    assert_field_items(details["missingFields"], ["documentId"])
    assert details["missingFields"][0]["label"] == "CPF"


async def test_rail_needing_two_fields_reports_both(api: Api) -> None:
    error = await create_error(
        api, {"amount": 50, "paymentMethodId": "1010"}, 422, "missing_required_fields"
    )
    assert_field_items(error["details"]["missingFields"], ["documentId", "userPhone"])


async def test_malformed_document_is_reported(api: Api) -> None:
    for document in ("12345678901", "111.111.111-11", "abc", "5299822472"):
        body = {"amount": 50, "paymentMethodId": "1006", "documentId": document}
        error = await create_error(api, body, 422, "missing_required_fields")
        assert_field_items(error["details"]["malformedFields"], ["documentId"])
        assert "missingFields" not in error["details"]
        assert error["details"]["reason"] == "malformed"


async def test_formatted_cpf_is_accepted(api: Api) -> None:
    tx = await api.pay(paymentMethodId="1006", documentId="529.982.247-25")
    assert tx["paymentMethod"] == "pix"


async def test_rail_needing_a_full_name_refuses_a_single_word(api: Api) -> None:
    # Boleto's and wire's userName is the payer's full name (at least 2 words).
    for name in ("Maria", "  Maria  "):
        body = {"amount": 50, "paymentMethodId": "1007", "documentId": CPF, "userName": name}
        error = await create_error(api, body, 422, "missing_required_fields")
        assert_field_items(error["details"]["malformedFields"], ["userName"])
    body = {"amount": 500, "paymentMethodId": "1029", "userName": "Smith"}
    error = await create_error(api, body, 422, "missing_required_fields")
    assert_field_items(error["details"]["malformedFields"], ["userName"])


async def test_hosted_checkout_requires_name_email_and_document(api: Api) -> None:
    body = {"amount": 50, "paymentMethodId": "1001", "hostedCheckout": True}
    error = await create_error(api, body, 422, "missing_required_fields")
    assert_field_items(error["details"]["missingFields"], ["userName", "email", "documentId"])

    partial = {**body, "userName": "Ana", "userEmail": "not-an-email", "documentId": RFC}
    error = await create_error(api, partial, 422, "missing_required_fields")
    assert_field_items(error["details"]["malformedFields"], ["userName", "email"])


async def test_hosted_checkout_returns_a_checkout_url(api: Api) -> None:
    return_url = "https://shop.example/done?order=7&x=a b"
    tx = await api.pay(
        hostedCheckout=True,
        returnUrl=return_url,
        userName="Ana Pérez López",
        userEmail="ana@example.mx",
        documentId=RFC,
    )
    url = urlsplit(tx["checkoutUrl"])
    assert url.scheme in ("http", "https") and url.netloc
    assert url.path == f"/c/{tx['transactionId']}"
    assert url.query == "returnUrl=" + quote(return_url, safe="")
    assert set(tx) == CREATE_FIELDS | {"checkoutUrl"}

    bare = await api.pay(
        hostedCheckout=True, userName="Ana Perez", userEmail="ana@example.mx", documentId=RFC
    )
    assert urlsplit(bare["checkoutUrl"]).path == f"/c/{bare['transactionId']}"


async def test_return_url_without_hosted_checkout_is_ignored(api: Api) -> None:
    tx = await api.pay(returnUrl="https://shop.example/done")
    assert "checkoutUrl" not in tx


async def test_customer_block_fills_hosted_checkout_fields(api: Api) -> None:
    tx = await api.pay(
        hostedCheckout=True,
        customer={"firstName": "Ana", "lastName": "Perez", "email": "ana@example.mx"},
        documentId=RFC,
    )
    assert tx["checkoutUrl"]


async def test_malformed_optional_email_is_refused(api: Api) -> None:
    for email in ("not-an-email", "a@b", "two@@example.com"):
        body = {"amount": 50, "paymentMethodId": "1001", "userEmail": email}
        error = await create_error(api, body, 400, "invalid_request")
        assert error["details"]["issues"][0]["path"] == "userEmail"


# -- pass-through fields and schema -------------------------------------------------------------


async def test_tags_and_order_id_are_echoed_verbatim(api: Api) -> None:
    tags = {"tag1": "  padded  ", "tag2": "ünïcödé ✓ 日本", "tag3": '{"json": [1, 2]}'}
    order = " Pedido #42 / ñandú "
    tx = await api.pay(merchantOrderId=order, **tags)
    assert tx["merchantOrderId"] == order
    assert {k: tx[k] for k in tags} == tags
    # Tags never affect routing or pricing.
    plain = await api.pay()
    for field in ("amount", "amountLocal", "fees", "paymentMethodId", "settlement"):
        assert tx[field] == plain[field]


async def test_maximum_lengths_are_accepted(api: Api) -> None:
    email = "a" * 64 + "@" + "b" * 185 + ".com"
    assert len(email) == 254
    tx = await api.pay(
        merchantOrderId="o" * 120,
        tag1="1" * 200,
        tag2="2" * 200,
        tag3="3" * 200,
        userName="N" * 60 + " " + "M" * 59,
        userEmail=email,
    )
    assert tx["merchantOrderId"] == "o" * 120 and tx["tag3"] == "3" * 200


async def test_over_length_fields_are_invalid_request(api: Api) -> None:
    cases = [
        ("merchantOrderId", "o" * 121),
        ("tag1", "t" * 201),
        ("tag2", "t" * 201),
        ("tag3", "t" * 201),
        ("userName", "N" * 60 + " " + "M" * 60),
        ("userEmail", "a" * 64 + "@" + "b" * 186 + ".com"),
    ]
    for field, value in cases:
        body = {"amount": 50, "paymentMethodId": "1001", field: value}
        error = await create_error(api, body, 400, "invalid_request")
        issues = error["details"]["issues"]
        assert any(issue["path"] == field for issue in issues), issues
        assert all(set(issue) == {"path", "message"} and issue["message"] for issue in issues)


async def test_unknown_field_is_named(api: Api) -> None:
    error = await create_error(
        api, {"amount": 50, "paymentMethodId": "1001", "colour": "blue"}, 400, "invalid_request"
    )
    assert {"path": "colour", "message": error["details"]["issues"][0]["message"]} in error[
        "details"
    ]["issues"]
    assert "colour" in error["message"]


async def test_wrong_types_are_invalid_request(api: Api) -> None:
    cases: list[tuple[str, Any]] = [
        ("tag1", 5),
        ("merchantOrderId", 42),
        ("paymentMethodId", 1001),
        ("userName", ["Ana", "Perez"]),
        ("hostedCheckout", "yes"),
        ("customer", "Ana"),
        ("userIp", "not-an-ip"),
        ("returnUrl", "/relative"),
    ]
    for field, value in cases:
        body = {"amount": 50, "paymentMethodId": "1001", field: value}
        error = await create_error(api, body, 400, "invalid_request")
        assert any(issue["path"] == field for issue in error["details"]["issues"]), field
    # An amount of the wrong type is refused as an invalid amount.
    await create_error(
        api, {"amount": {"value": 1}, "paymentMethodId": "1001"}, 400, "amount_invalid"
    )


async def test_no_error_creates_a_transaction(api: Api, keys: Keys) -> None:
    bodies: list[tuple[str, dict[str, Any]]] = [
        (keys.sandbox_sk, {"paymentMethodId": "1001"}),
        (keys.sandbox_sk, {"amount": 0, "paymentMethodId": "1001"}),
        (keys.sandbox_sk, {"amount": 50, "paymentMethodId": "1006"}),
        (keys.sandbox_sk, {"amount": 50, "paymentMethodId": "9999"}),
        (keys.sandbox_sk, {"amount": 6000, "paymentMethodId": "1019"}),
        (keys.sandbox_sk, {"amount": 50, "currency": "JPY", "paymentMethodId": "1001"}),
        (keys.live_sk, {"amount": 50, "paymentMethodId": "1014", "documentId": DNI_AR}),
        (
            keys.live_sk,
            {"amount": 50, "paymentMethodId": "1021", "documentId": DNI_PE, "userEmail": "a@b.pe"},
        ),
    ]
    for key, body in bodies:
        status, _, _ = await create(api, body, key)
        assert status >= 400
    for key in (keys.sandbox_sk, keys.live_sk):
        status, page, _ = await api.get("/payments", key)
        assert status == 200 and page["data"] == [] and page["pagination"]["total"] == 0


# -- the /transactions alias ------------------------------------------------------------------


async def test_post_transactions_is_an_alias(api: Api) -> None:
    status, tx, _ = await create(
        api, {"amount": 50, "paymentMethodId": "1001", "tag1": "alias"}, path="/transactions"
    )
    assert status == 200, tx
    assert set(tx) == CREATE_FIELDS and TXN_ID.match(tx["transactionId"])
    assert is_valid_clabe(tx["paymentData"]["clabe"])
    status, got, _ = await api.get(f"/payments/{tx['transactionId']}", KEYS.sandbox_sk)
    assert status == 200 and got["tag1"] == "alias"

    for body, http_status, code in [
        ({"paymentMethodId": "1001"}, 400, "missing_field"),
        ({"amount": 50, "paymentMethodId": "1006"}, 422, "missing_required_fields"),
        ({"amount": 50, "paymentMethodId": "9999"}, 422, "cascade_exhausted"),
    ]:
        status, error, _ = await create(api, body, path="/transactions")
        assert_error(status, error, http_status, code)
    assert await count(api) == 1
