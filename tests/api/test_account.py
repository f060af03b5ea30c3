"""GET /ping, /me, /me/balance and /payment-methods through the HTTP API.

Spec: GET /ping, Merchant identity, Balance (pay-in), Payment method (catalog entry), GET
/payment-methods and its contract (every routable entry is chargeable with POST /payments).
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import pytest

from simulator.domain.documents import is_valid_document
from tests.conftest import Api, Keys, assert_error

API_VERSION = "2026-05-01"
MERCHANT = {"id": "mer_mercadoazul", "name": "Mercado Azul S.A. de C.V."}
SANDBOX_BUILTINS = {
    # id: (country ISO-3, channel, method slug or None when the spec names no slug)
    "sbx_pix": ("BRA", "ONLINE", "pix"),
    "sbx_spei": ("MEX", "ONLINE", "spei"),
    "sbx_pse": ("COL", "ONLINE", "bank_transfer"),
    "sbx_card": ("USA", "CREDIT_CARD", "card"),
    "sbx_cash": ("MEX", "CASH", None),
}
RESTRICTED_METHODS = {"1006", "1007", "1008", "1009", "1025"}  # shp_lverde_loja's catalog ids
CATALOG_FIELDS = {
    "paymentMethodId": str,
    "method": str,
    "methodLabel": str,
    "name": str,
    "country": str,
    "countryIso3": str,
    "channel": str,
    "imageUrl": str,
    "iconUrl": str,
    "currencies": list,
    "currencyLimits": list,
    "minTxUsd": (int, float, type(None)),
    "maxTxUsd": (int, float, type(None)),
    "fee": dict,
    "enabled": bool,
    "online": bool,
    "routable": bool,
    "unroutableReason": (str, type(None)),
}
BALANCE_NUMBERS = ("available", "pending", "frozen", "reserve")
FEE_SUMMARY = (
    "grossVolume",
    "platformFees",
    "flatFees",
    "chargebackFees",
    "totalFees",
    "netBalance",
)
# A buyer that satisfies every rail: two-word name, e-mail, phone with country code, and a
# document valid for the method's country (checked against the simulator's own validator).
BUYER = {
    "userName": "Ana Maria Souza",
    "userEmail": "ana@example.com",
    "userPhone": "+5511987654321",
}
DOCUMENTS = {
    "MEX": "GODE561231GR8",  # RFC
    "BRA": "52998224725",  # CPF
    "COL": "1234567890",  # CC
    "ARG": "12345678",  # DNI
    "CHL": "12345678-5",  # RUT
    "PER": "12345678",  # DNI
    "USA": "123456789",
}


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def parse_time(value: str) -> datetime:
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    assert moment.tzinfo is not None, value
    return moment


def document_for(country_iso3: str) -> str:
    document = DOCUMENTS[country_iso3]
    assert is_valid_document(country_iso3, document), (country_iso3, document)
    return document


def amount_for(entry: dict[str, Any]) -> tuple[str, int | float]:
    """A charge inside the method's bounds, in its local currency: the geometric mean of the
    local limits keeps far from both ends, so the USD headline also clears minTxUsd/maxTxUsd."""
    currency = entry["currencies"][0]
    limit = next(lim for lim in entry["currencyLimits"] if lim["currency"] == currency)
    amount: int | float = round(math.sqrt(limit["min"] * limit["max"]))
    if currency == "USD" and entry["minTxUsd"] is not None:
        amount = max(amount, entry["minTxUsd"])
    assert limit["min"] <= amount <= limit["max"], (entry["paymentMethodId"], amount, limit)
    return currency, amount


async def listing(api: Api, key: str, query: str = "") -> dict[str, Any]:
    status, body, _ = await api.get(f"/payment-methods{query}", key)
    assert status == 200, body
    return body


# -- GET /ping -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "environment", "kind"),
    [
        (Keys.sandbox_sk, "sandbox", "secret"),
        (Keys.sandbox_pk, "sandbox", "publishable"),
        (Keys.live_sk, "production", "secret"),
        (Keys.live_pk, "production", "publishable"),
        (Keys.legacy_sk, "sandbox", "secret"),
    ],
)
async def test_ping_fields(api: Api, key: str, environment: str, kind: str) -> None:
    status, body, response = await api.get("/ping", key)
    assert status == 200, body
    assert set(body) >= {
        "ok", "environment", "keyKind", "keyId", "apiVersion", "merchant", "timestamp"
    }  # fmt: skip
    assert body["ok"] is True
    assert body["environment"] == environment
    assert body["keyKind"] == kind
    assert body["apiVersion"] == API_VERSION
    assert body["merchant"] == MERCHANT
    parse_time(body["timestamp"])
    # keyId is masked: never the full key, nor enough of its random part to rebuild it.
    key_id = body["keyId"]
    assert isinstance(key_id, str) and key_id
    random_part = key[8:]
    assert key not in key_id and random_part not in key_id and random_part[:12] not in key_id
    assert key not in response.headers.get("X-Request-Id", "")


async def test_ping_with_an_access_token_masks_the_key(api: Api, keys: Keys) -> None:
    status, pair, _ = await api.post(
        "/auth/token", json={"apiKey": keys.sandbox_pk, "secretKey": keys.sandbox_sk}
    )
    assert status == 200, pair
    status, body, _ = await api.get("/ping", pair["accessToken"])
    assert status == 200 and body["keyKind"] == "secret", body
    assert keys.sandbox_sk not in body["keyId"] and keys.sandbox_sk[8:20] not in body["keyId"]
    assert pair["accessToken"] not in body["keyId"]


async def test_ping_timestamp_follows_the_simulated_clock(api: Api, keys: Keys) -> None:
    status, before, _ = await api.get("/ping", keys.sandbox_sk)
    assert status == 200
    await api.advance(86_400)
    status, after, _ = await api.get("/ping", keys.sandbox_sk)
    assert status == 200
    elapsed = (parse_time(after["timestamp"]) - parse_time(before["timestamp"])).total_seconds()
    assert 86_400 <= elapsed < 86_400 + 30, elapsed
    status, clock, _ = await api.get("/_sim/clock", keys.sandbox_sk)
    assert status == 200
    drift = (parse_time(clock["now"]) - parse_time(after["timestamp"])).total_seconds()
    assert 0 <= drift < 30, drift


async def test_ping_has_no_side_effects(api: Api, keys: Keys) -> None:
    for _ in range(3):
        status, _body, _ = await api.get("/ping", keys.sandbox_sk)
        assert status == 200
    status, page, _ = await api.get("/payments", keys.sandbox_sk)
    assert status == 200 and page["pagination"]["total"] == 0
    status, balance, _ = await api.get("/me/balance", keys.sandbox_sk)
    assert status == 200 and balance["movements"] == []


# -- GET /me -------------------------------------------------------------------------------------


def check_identity(body: dict[str, Any]) -> None:
    for name in ("id", "name", "email", "industry"):
        assert isinstance(body[name], str) and body[name], (name, body)
    assert "@" in body["email"]
    assert body["tier"] in ("starter", "standard", "premium")
    assert isinstance(body["trustScore"], int) and not isinstance(body["trustScore"], bool)
    assert 0 <= body["trustScore"] <= 1000
    assert body["environment"] in ("sandbox", "production")
    capabilities = body["capabilities"]
    for flag in ("checkout", "directCharge", "refunds", "webhooks"):
        assert isinstance(capabilities[flag], bool), (flag, capabilities)
    for array in ("crypto", "methods"):
        assert isinstance(capabilities[array], list), (array, capabilities)
        assert all(isinstance(item, str) and item for item in capabilities[array])


async def test_me_fields(api: Api, keys: Keys) -> None:
    status, body, _ = await api.get("/me", keys.sandbox_sk)
    assert status == 200, body
    check_identity(body)
    assert body["id"] == MERCHANT["id"] and body["name"] == MERCHANT["name"]
    assert body["email"] == "pagos@mercadoazul.mx" and body["industry"] == "retail"
    assert body["tier"] == "standard" and body["trustScore"] == 720
    assert body["environment"] == "sandbox"
    capabilities = body["capabilities"]
    assert capabilities["checkout"] is True and capabilities["directCharge"] is True
    assert capabilities["refunds"] is True and capabilities["webhooks"] is True
    assert sorted(capabilities["crypto"]) == ["USDC", "USDT"]


@pytest.mark.parametrize(
    ("key", "merchant_id", "tier", "environment"),
    [
        (Keys.live_sk, "mer_mercadoazul", "standard", "production"),
        (Keys.restricted_sk, "mer_lojaverde", "premium", "sandbox"),
        (Keys.other_sk, "mer_fiestaboletos", "premium", "sandbox"),
        (Keys.other_live_sk, "mer_fiestaboletos", "premium", "production"),
        (Keys.starter_sk, "mer_cafeandino", "starter", "sandbox"),
        (Keys.legacy_sk, "mer_mercadoazul", "standard", "sandbox"),
    ],
)
async def test_me_per_merchant(
    api: Api, key: str, merchant_id: str, tier: str, environment: str
) -> None:
    status, body, _ = await api.get("/me", key)
    assert status == 200, body
    check_identity(body)
    assert body["id"] == merchant_id and body["tier"] == tier
    assert body["environment"] == environment


@pytest.mark.parametrize("key", [Keys.sandbox_sk, Keys.live_sk, Keys.restricted_sk])
async def test_me_methods_are_the_listings_slugs(api: Api, key: str) -> None:
    status, me, _ = await api.get("/me", key)
    assert status == 200, me
    methods = (await listing(api, key))["methods"]
    assert sorted(me["capabilities"]["methods"]) == sorted({m["method"] for m in methods})


# -- GET /me/balance -----------------------------------------------------------------------------


def check_balance_shape(body: dict[str, Any]) -> None:
    assert set(body) >= {
        "merchantId", "currency", "balance", "ledgerWarnings", "tier", "trustScore",
        "rollingReservePct", "withdrawalFeeUsd", "feeSummary", "movements", "reserveSchedule",
    }  # fmt: skip
    assert isinstance(body["merchantId"], str) and body["currency"] == "USD"
    assert set(body["balance"]) >= set(BALANCE_NUMBERS)
    assert all(is_number(body["balance"][name]) for name in BALANCE_NUMBERS), body["balance"]
    assert set(body["feeSummary"]) >= set(FEE_SUMMARY)
    assert all(is_number(body["feeSummary"][name]) for name in FEE_SUMMARY), body["feeSummary"]
    for name in ("ledgerWarnings", "movements", "reserveSchedule"):
        assert isinstance(body[name], list), name
    assert body["tier"] in ("starter", "standard", "premium")
    assert isinstance(body["trustScore"], int) and 0 <= body["trustScore"] <= 1000
    assert is_number(body["rollingReservePct"]) and is_number(body["withdrawalFeeUsd"])


@pytest.mark.parametrize("key", [Keys.sandbox_sk, Keys.live_sk, Keys.starter_sk])
async def test_balance_of_a_fresh_merchant_is_all_zeros(api: Api, key: str) -> None:
    status, body, _ = await api.get("/me/balance", key)
    assert status == 200, body
    check_balance_shape(body)
    assert all(body["balance"][name] == 0 for name in BALANCE_NUMBERS), body["balance"]
    assert all(body["feeSummary"][name] == 0 for name in FEE_SUMMARY), body["feeSummary"]
    assert body["ledgerWarnings"] == [] and body["movements"] == []
    assert body["reserveSchedule"] == []
    status, me, _ = await api.get("/me", key)
    assert body["merchantId"] == me["id"]
    assert body["tier"] == me["tier"] and body["trustScore"] == me["trustScore"]


async def test_balance_terms_come_from_the_merchant(api: Api, keys: Keys) -> None:
    status, body, _ = await api.get("/me/balance", keys.sandbox_sk)
    assert status == 200
    assert body["rollingReservePct"] == 5 and body["withdrawalFeeUsd"] == 10
    status, body, _ = await api.get("/me/balance", keys.starter_sk)
    assert status == 200 and body["tier"] == "starter"
    assert body["rollingReservePct"] == 10 and body["withdrawalFeeUsd"] == 15


async def test_balance_after_a_completed_payment_stays_consistent(api: Api, keys: Keys) -> None:
    tx = await api.pay()
    status, body, _ = await api.post(
        f"/payments/{tx['transactionId']}/simulate", keys.sandbox_sk, json={"action": "paid"}
    )
    assert status == 200, body
    status, body, _ = await api.get("/me/balance", keys.sandbox_sk)
    assert status == 200
    check_balance_shape(body)
    fees = body["feeSummary"]
    assert fees["grossVolume"] == 50
    assert math.isclose(
        fees["totalFees"], fees["platformFees"] + fees["flatFees"] + fees["chargebackFees"]
    )
    assert math.isclose(fees["netBalance"], fees["grossVolume"] - fees["totalFees"])
    assert body["balance"]["pending"] > 0  # settlement delay: not available yet
    assert body["movements"], body


# -- GET /payment-methods: shape -----------------------------------------------------------------


def check_entry(entry: dict[str, Any], origin: str) -> None:
    assert set(entry) >= set(CATALOG_FIELDS), set(CATALOG_FIELDS) - set(entry)
    for name, kind in CATALOG_FIELDS.items():
        assert isinstance(entry[name], kind), (entry["paymentMethodId"], name, entry[name])
    method_id = entry["paymentMethodId"]
    assert (len(method_id) == 4 and method_id.isdigit() and int(method_id) >= 1001) or (
        method_id.startswith("sbx_")
    ), method_id
    assert len(entry["country"]) == 2 and entry["country"].isupper()
    assert len(entry["countryIso3"]) == 3 and entry["countryIso3"].isupper()
    assert entry["channel"] in ("ONLINE", "CASH", "CREDIT_CARD")
    assert entry["currencies"] and all(
        isinstance(c, str) and len(c) == 3 for c in entry["currencies"]
    )
    assert entry["currencyLimits"]
    for limit in entry["currencyLimits"]:
        assert set(limit) >= {"currency", "min", "max"}
        assert limit["currency"] in entry["currencies"]
        assert is_number(limit["min"]) and is_number(limit["max"]) and limit["min"] <= limit["max"]
    if entry["minTxUsd"] is not None and entry["maxTxUsd"] is not None:
        assert entry["minTxUsd"] <= entry["maxTxUsd"]
    assert is_number(entry["fee"]["percent"]) and is_number(entry["fee"]["flat"])
    assert isinstance(entry["fee"]["currency"], str)
    # routable decides visibility; an unroutable entry says why, a routable one does not.
    if entry["routable"]:
        assert entry["unroutableReason"] is None
    else:
        assert entry["unroutableReason"], entry
    # iconUrl is absolute on this server; imageUrl is its legacy relative form.
    icon = urlsplit(entry["iconUrl"])
    assert icon.scheme in ("http", "https") and icon.netloc, entry["iconUrl"]
    assert f"{icon.scheme}://{icon.netloc}" == origin
    assert not entry["imageUrl"].startswith(("http://", "https://"))
    assert entry["iconUrl"].endswith(entry["imageUrl"])


def origin_of(api: Api) -> str:
    url = api.client.make_url("/")
    return f"{url.scheme}://{url.host}:{url.port}"


@pytest.mark.parametrize(
    "key", [Keys.sandbox_sk, Keys.sandbox_pk, Keys.live_sk, Keys.live_pk, Keys.restricted_sk]
)
async def test_listing_shape(api: Api, key: str) -> None:
    body = await listing(api, key)
    assert set(body) >= {
        "shop", "environment", "filters", "count", "totalAvailable", "routableCount", "methods"
    }  # fmt: skip
    assert set(body["shop"]) >= {"id", "name"}
    assert all(isinstance(body["shop"][k], str) and body["shop"][k] for k in ("id", "name"))
    assert body["environment"] == ("sandbox" if "_test_" in key else "production")
    assert body["filters"] == {"country": None, "channel": None, "method": None}
    for name in ("count", "totalAvailable", "routableCount"):
        assert isinstance(body[name], int) and not isinstance(body[name], bool)
    methods = body["methods"]
    assert body["count"] == len(methods) == body["totalAvailable"]
    assert body["routableCount"] == sum(1 for m in methods if m["routable"])
    ids = [m["paymentMethodId"] for m in methods]
    assert len(ids) == len(set(ids)), ids
    origin = origin_of(api)
    for entry in methods:
        check_entry(entry, origin)


async def test_listing_names_the_credentials_shop(api: Api, keys: Keys) -> None:
    assert (await listing(api, keys.sandbox_sk))["shop"] == {
        "id": "shp_mazul_tienda",
        "name": "Mercado Azul Tienda en Línea",
    }
    assert (await listing(api, keys.restricted_pk))["shop"]["id"] == "shp_lverde_loja"
    assert (await listing(api, keys.promoted_live_sk))["shop"]["id"] == "shp_mazul_app"


async def test_every_icon_resolves_to_an_svg(api: Api, keys: Keys) -> None:
    methods = (await listing(api, keys.sandbox_sk))["methods"]
    methods += (await listing(api, keys.live_sk))["methods"]
    icons = {m["iconUrl"] for m in methods}
    assert len(icons) > 1
    for url in sorted(icons):
        parts = urlsplit(url)
        response = await api.client.get(parts.path)
        assert response.status == 200, url
        assert response.content_type == "image/svg+xml", (url, response.content_type)
        text = await response.text()
        assert "<svg" in text, url


async def test_methods_without_a_logo_get_a_generic_category_icon(api: Api, keys: Keys) -> None:
    methods = (await listing(api, keys.live_sk))["methods"]
    by_id = {m["paymentMethodId"]: m for m in methods}
    # 1003 (MX cash voucher), 1005 (MX debit card) and 1029 (US wire, online) have no logo.
    generic = {by_id[i]["iconUrl"] for i in ("1003", "1005", "1029")}
    assert len(generic) == 3, generic  # one icon per category, not one placeholder for all
    own = {m["iconUrl"] for m in methods if m["paymentMethodId"] in ("1001", "1002", "1006")}
    assert generic.isdisjoint(own)
    for url in generic:
        response = await api.client.get(urlsplit(url).path)
        assert response.status == 200 and response.content_type == "image/svg+xml", url
    # The same category shares the same generic icon.
    assert by_id["1003"]["iconUrl"] == by_id["1022"]["iconUrl"]  # both CASH without a logo
    assert by_id["1005"]["iconUrl"] == by_id["1012"]["iconUrl"]  # both cards without a logo


async def test_icon_urls_are_cacheable_and_public(api: Api, keys: Keys) -> None:
    entry = (await listing(api, keys.sandbox_sk, "?method=spei&country=MX"))["methods"][0]
    response = await api.client.get(urlsplit(entry["iconUrl"]).path)  # no Authorization
    assert response.status == 200
    assert response.headers.get("ETag") or response.headers.get("Last-Modified")


# -- GET /payment-methods: filters ---------------------------------------------------------------


@pytest.mark.parametrize("country", ["MX", "MEX", "mx", "mex"])
async def test_country_filter_accepts_iso2_and_iso3(api: Api, keys: Keys, country: str) -> None:
    body = await listing(api, keys.sandbox_sk, f"?country={country}")
    assert body["filters"] == {"country": "MEX", "channel": None, "method": None}
    assert body["count"] == len(body["methods"]) > 0
    assert all(m["countryIso3"] == "MEX" and m["country"] == "MX" for m in body["methods"])
    full = await listing(api, keys.sandbox_sk)
    assert body["totalAvailable"] == full["totalAvailable"] > body["count"]
    expected = [m["paymentMethodId"] for m in full["methods"] if m["countryIso3"] == "MEX"]
    assert [m["paymentMethodId"] for m in body["methods"]] == expected
    assert body["routableCount"] == sum(1 for m in body["methods"] if m["routable"])


@pytest.mark.parametrize("country", ["XX", "ZZZ", "MEXICO", "M", "12", "M X"])
async def test_bad_country_is_400(api: Api, keys: Keys, country: str) -> None:
    status, body, _ = await api.get(f"/payment-methods?country={country}", keys.sandbox_sk)
    error = assert_error(status, body, 400, "invalid_request")
    assert error.get("param") == "country"


@pytest.mark.parametrize("channel", ["ONLINE", "CASH", "CREDIT_CARD"])
async def test_channel_filter(api: Api, keys: Keys, channel: str) -> None:
    body = await listing(api, keys.sandbox_sk, f"?channel={channel}")
    assert body["filters"] == {"country": None, "channel": channel, "method": None}
    assert body["methods"] and all(m["channel"] == channel for m in body["methods"])
    assert body["count"] == len(body["methods"])
    assert body["routableCount"] == sum(1 for m in body["methods"] if m["routable"])


@pytest.mark.parametrize("channel", ["BOGUS", "CARD", "ONLINE,CASH"])
async def test_bad_channel_is_400(api: Api, keys: Keys, channel: str) -> None:
    status, body, _ = await api.get(f"/payment-methods?channel={channel}", keys.sandbox_sk)
    error = assert_error(status, body, 400, "invalid_request")
    assert error.get("param") == "channel"


async def test_method_filter(api: Api, keys: Keys) -> None:
    body = await listing(api, keys.sandbox_sk, "?method=pix")
    assert body["filters"] == {"country": None, "channel": None, "method": "pix"}
    assert {m["paymentMethodId"] for m in body["methods"]} >= {"1006", "sbx_pix"}
    assert all(m["method"] == "pix" for m in body["methods"])
    body = await listing(api, keys.sandbox_sk, "?method=card&country=PE&channel=CREDIT_CARD")
    assert body["filters"] == {"country": "PER", "channel": "CREDIT_CARD", "method": "card"}
    assert [m["paymentMethodId"] for m in body["methods"]] == ["1023"]
    assert body["count"] == 1 and body["routableCount"] == 1
    body = await listing(api, keys.sandbox_sk, "?method=no_such_rail")
    assert body["count"] == 0 and body["methods"] == [] and body["routableCount"] == 0
    assert body["totalAvailable"] > 0


async def test_an_empty_free_text_filter_filters_nothing(api: Api, keys: Keys) -> None:
    body = await listing(api, keys.sandbox_sk, "?method=")
    assert body["filters"] == {"country": None, "channel": None, "method": None}
    assert body["count"] == body["totalAvailable"]


@pytest.mark.parametrize(
    "query", ["?channel=", "?country=", "?channel=online", "?country=&method="]
)
async def test_an_empty_code_or_enum_filter_is_refused(api: Api, keys: Keys, query: str) -> None:
    """`channel` is an enum and `country` a code: an empty value is not one of them (only
    leaving the parameter out means "any")."""
    status, body, _ = await api.get(f"/payment-methods{query}", keys.sandbox_sk)
    error = assert_error(status, body, 400, "invalid_request")
    assert error["param"] == query[1:].split("=")[0]


# -- GET /payment-methods: environments and shops ------------------------------------------------


async def test_sandbox_lists_the_builtin_test_methods(api: Api, keys: Keys) -> None:
    for key in (keys.sandbox_sk, keys.sandbox_pk, keys.restricted_sk, keys.other_sk):
        by_id = {m["paymentMethodId"]: m for m in (await listing(api, key))["methods"]}
        assert set(SANDBOX_BUILTINS) <= set(by_id), (key, sorted(by_id))
        for method_id, (country, channel, slug) in SANDBOX_BUILTINS.items():
            entry = by_id[method_id]
            assert entry["countryIso3"] == country and entry["channel"] == channel, entry
            assert slug is None or entry["method"] == slug, entry
            assert entry["routable"] is True


async def test_production_lists_no_builtin_test_methods(api: Api, keys: Keys) -> None:
    for key in (keys.live_sk, keys.live_pk, keys.other_live_sk, keys.promoted_live_sk):
        body = await listing(api, key)
        assert body["environment"] == "production"
        ids = {m["paymentMethodId"] for m in body["methods"]}
        assert ids and not any(i.startswith("sbx_") for i in ids), ids
        assert all(len(i) == 4 and i.isdigit() for i in ids)


async def test_sandbox_is_the_production_catalog_plus_builtins(api: Api, keys: Keys) -> None:
    sandbox = {m["paymentMethodId"] for m in (await listing(api, keys.sandbox_sk))["methods"]}
    production = {m["paymentMethodId"] for m in (await listing(api, keys.live_sk))["methods"]}
    assert sandbox == production | set(SANDBOX_BUILTINS)


async def test_restricted_shop_sees_only_its_enabled_methods(api: Api, keys: Keys) -> None:
    for key in (keys.restricted_sk, keys.restricted_pk):
        body = await listing(api, key)
        ids = {m["paymentMethodId"] for m in body["methods"]}
        # Its own catalog methods, plus the sandbox built-ins the spec says are always listed.
        assert ids == RESTRICTED_METHODS | set(SANDBOX_BUILTINS), ids
        assert body["totalAvailable"] == len(ids)
    # A code that is not in its listing cannot be charged.
    status, body, _ = await api.post(
        "/payments",
        keys.restricted_sk,
        json={"amount": 50, "paymentMethodId": "1001", **BUYER, "documentId": DOCUMENTS["MEX"]},
    )
    error = assert_error(status, body, 422, "cascade_exhausted")
    assert error["details"]["paymentMethodEnabledForShop"] is False
    # Mexican methods are absent even when asked for by country.
    body = await listing(api, keys.restricted_sk, "?country=MX")
    assert {m["paymentMethodId"] for m in body["methods"]} <= set(SANDBOX_BUILTINS)


async def test_restricted_shop_in_production(api: Api, keys: Keys) -> None:
    status, body, _ = await api.get("/payment-methods", "sk_live_srkvzw8alo0a6ns4631emvw9")
    assert status == 200, body
    assert {m["paymentMethodId"] for m in body["methods"]} == RESTRICTED_METHODS


# -- the listing contract ------------------------------------------------------------------------


@pytest.mark.parametrize("key", [Keys.sandbox_sk, Keys.restricted_sk])
async def test_every_routable_sandbox_entry_is_chargeable(api: Api, key: str) -> None:
    body = await listing(api, key)
    routable = [m for m in body["methods"] if m["routable"]]
    assert len(routable) == body["routableCount"] > 0
    for entry in routable:
        currency, amount = amount_for(entry)
        payload = {
            "amount": amount,
            "currency": currency,
            "paymentMethodId": entry["paymentMethodId"],
            **BUYER,
            "documentId": document_for(entry["countryIso3"]),
        }
        status, tx, _ = await api.post("/payments", key, json=payload)
        assert status == 200, (entry["paymentMethodId"], tx)
        assert tx["status"] == "pending"
        assert tx["paymentMethodId"] == entry["paymentMethodId"]
        assert tx["paymentMethod"] == entry["method"]
        assert tx["country"] == entry["countryIso3"]
        assert tx["currencyLocal"] == currency and tx["amountLocal"] == amount
        assert tx["iconUrl"] == entry["iconUrl"]
    status, page, _ = await api.get("/payments?limit=100", key)
    assert status == 200 and page["pagination"]["total"] == len(routable)


async def test_routable_sandbox_entries_are_chargeable_in_usd(api: Api, keys: Keys) -> None:
    # The same contract with the default currency: amounts in USD inside minTxUsd/maxTxUsd.
    body = await listing(api, keys.sandbox_sk, "?channel=CREDIT_CARD")
    for entry in (m for m in body["methods"] if m["routable"]):
        low = entry["minTxUsd"] or 1
        high = entry["maxTxUsd"] or 10_000
        amount = round(math.sqrt(low * high), 2)
        payload = {
            "amount": amount,
            "paymentMethodId": entry["paymentMethodId"],
            **BUYER,
            "documentId": document_for(entry["countryIso3"]),
        }
        status, tx, _ = await api.post("/payments", keys.sandbox_sk, json=payload)
        assert status == 200, (entry["paymentMethodId"], tx)
        assert tx["amount"] == amount and tx["currency"] == "USD"


@pytest.mark.parametrize(
    "path",
    [
        "/payments?stauts=completed",
        "/payment-methods?chanel=CASH",
        "/webhooks?limit=5&unknown=1",
        "/_sim/requests?merchent=mer_x",
        "/_sim/clock?verbose=1",
    ],
)
async def test_a_query_parameter_the_operation_does_not_have_is_refused(
    api: Api, keys: Keys, path: str
) -> None:
    """A misspelt filter would otherwise answer the unfiltered list."""
    status, body, _ = await api.get(path, keys.sandbox_sk)
    error = assert_error(status, body, 400, "invalid_request")
    name = path.split("?")[1].split("&")[-1].split("=")[0]
    assert error["param"] == name
    assert "not a parameter" in error["message"]
