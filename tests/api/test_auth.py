"""Authentication through the HTTP API: token flow, raw keys, environments, standing, isolation.

Spec: Authentication section and the authentication / permission error tables.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from simulator.app import create_app
from simulator.settings import Settings
from tests.conftest import Api, Keys, assert_error

MERCHANT = {"id": "mer_mercadoazul", "name": "Mercado Azul S.A. de C.V."}
SUSPENDED_MERCHANT_PK = "pk_test_xpi391n5c3mw0na1j08dddkz"  # mer_rapidoexpress
SUSPENDED_SHOP_PK = "pk_test_idpcjgfeo31dx5oza0qcn0uw"  # shp_mazul_outlet
PROMOTED_SANDBOX_PK = "pk_test_axur2vqkww3337x03r2yunxn"  # shp_mazul_app
OTHER_PK = "pk_test_gpdhgg264j4jr1ib59jqlz86"  # mer_fiestaboletos
DAY = 86_400
REFRESH_SECONDS = 30 * DAY


async def issue(api: Api, pk: str, sk: str) -> dict[str, Any]:
    status, body, _ = await api.post("/auth/token", json={"apiKey": pk, "secretKey": sk})
    assert status == 200, body
    return body


async def refresh(api: Api, token: str) -> tuple[int, Any]:
    status, body, _ = await api.post("/auth/refresh", json={"refreshToken": token})
    return status, body


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def assert_refused(status: int, body: Any) -> None:
    """A refused refresh token: 401 in the envelope. The spec only says "401"; a used or unknown
    refresh token is either corrupt (invalid_token) or a rotated credential (invalid_api_key)."""
    assert status == 401, body
    code = body["error"]["code"] if isinstance(body, dict) and "error" in body else None
    assert code in ("invalid_token", "invalid_api_key"), body
    assert_error(status, body, 401, code)


def _swap(char: str) -> str:
    return "B" if char == "A" else "A"


# -- POST /auth/token ----------------------------------------------------------------------------


async def test_token_success_shape(api: Api, keys: Keys) -> None:
    body = await issue(api, keys.sandbox_pk, keys.sandbox_sk)
    assert body["tokenType"] == "Bearer"
    assert body["expiresIn"] == 3600 and isinstance(body["expiresIn"], int)
    assert body["environment"] == "sandbox"
    assert body["merchant"] == MERCHANT
    access, refresh_token = body["accessToken"], body["refreshToken"]
    assert isinstance(access, str) and isinstance(refresh_token, str)
    assert access and refresh_token and access != refresh_token
    # Neither token leaks the secret key it was issued for.
    assert keys.sandbox_sk not in access and keys.sandbox_sk not in refresh_token


async def test_access_token_works_on_ping_and_me(api: Api, keys: Keys) -> None:
    access = (await issue(api, keys.sandbox_pk, keys.sandbox_sk))["accessToken"]
    status, ping, _ = await api.get("/ping", access)
    assert status == 200, ping
    assert ping["environment"] == "sandbox" and ping["keyKind"] == "secret"
    assert ping["merchant"] == MERCHANT
    status, me, _ = await api.get("/me", access)
    assert status == 200 and me["id"] == MERCHANT["id"] and me["environment"] == "sandbox"
    # The token acts for the pair's shop: a direct charge works without naming it.
    status, tx, _ = await api.post(
        "/payments", access, json={"amount": 50, "paymentMethodId": "1001"}
    )
    assert status == 200, tx


async def test_production_pair_gives_a_production_token(api: Api, keys: Keys) -> None:
    body = await issue(api, keys.live_pk, keys.live_sk)
    assert body["environment"] == "production" and body["merchant"] == MERCHANT
    status, ping, _ = await api.get("/ping", body["accessToken"])
    assert status == 200 and ping["environment"] == "production"


@pytest.mark.parametrize(
    ("pk", "sk"),
    [
        (Keys.sandbox_pk, Keys.live_sk),  # sandbox publishable + live secret
        (Keys.live_pk, Keys.sandbox_sk),  # live publishable + sandbox secret
    ],
)
async def test_token_mixing_environments_is_invalid_api_key(api: Api, pk: str, sk: str) -> None:
    status, body, _ = await api.post("/auth/token", json={"apiKey": pk, "secretKey": sk})
    assert_error(status, body, 401, "invalid_api_key")


@pytest.mark.parametrize(
    ("pk", "sk"),
    [
        (OTHER_PK, Keys.sandbox_sk),  # another merchant's publishable key
        (Keys.restricted_pk, Keys.sandbox_sk),
        ("pk_test_000000000000000000000000", Keys.sandbox_sk),  # unknown publishable
        (Keys.sandbox_pk, "sk_test_000000000000000000000000"),  # unknown secret
        (Keys.sandbox_sk, Keys.sandbox_sk),  # a secret key where the publishable one belongs
        (Keys.sandbox_pk, Keys.sandbox_pk),  # a publishable key where the secret one belongs
        (Keys.sandbox_sk, Keys.sandbox_pk),  # swapped
        (Keys.sandbox_pk, Keys.legacy_sk),  # merchant-wide key: no publishable half
        ("garbage", "garbage"),
    ],
)
async def test_token_wrong_pair_is_401(api: Api, pk: str, sk: str) -> None:
    status, body, _ = await api.post("/auth/token", json={"apiKey": pk, "secretKey": sk})
    assert_error(status, body, 401, "invalid_api_key")


@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"apiKey": Keys.sandbox_pk},
        {"secretKey": Keys.sandbox_sk},
        {"apiKey": "", "secretKey": Keys.sandbox_sk},
        {"apiKey": Keys.sandbox_pk, "secretKey": None},
        {"apiKey": 123, "secretKey": Keys.sandbox_sk},
        {"apiKey": [Keys.sandbox_pk], "secretKey": Keys.sandbox_sk},
    ],
)
async def test_token_missing_or_mistyped_fields_is_400(api: Api, payload: dict[str, Any]) -> None:
    status, body, _ = await api.post("/auth/token", json=payload)
    error = assert_error(status, body, 400, "invalid_request")
    assert error["details"]["issues"], error
    assert {issue["path"] for issue in error["details"]["issues"]} <= {"apiKey", "secretKey"}


async def test_token_non_json_bodies(api: Api, keys: Keys) -> None:
    form = f"apiKey={keys.sandbox_pk}&secretKey={keys.sandbox_sk}"
    status, body, _ = await api.post(
        "/auth/token", data=form, headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert_error(status, body, 415, "content_type_required")
    status, body, _ = await api.post(
        "/auth/token", data="{apiKey:", headers={"Content-Type": "application/json"}
    )
    assert_error(status, body, 400, "invalid_json")
    status, body, _ = await api.post(
        "/auth/token", data="", headers={"Content-Type": "application/json"}
    )
    assert_error(status, body, 400, "invalid_request")
    status, body, _ = await api.post("/auth/token", json=[keys.sandbox_pk, keys.sandbox_sk])
    assert_error(status, body, 400, "invalid_request")


async def test_token_endpoints_need_no_credentials_and_ignore_bad_ones(
    api: Api, keys: Keys
) -> None:
    # auth: none. A stale Authorization header must not block getting a fresh token.
    status, body, _ = await api.post(
        "/auth/token",
        "sk_test_000000000000000000000000",
        json={"apiKey": keys.sandbox_pk, "secretKey": keys.sandbox_sk},
    )
    assert status == 200, body


# -- POST /auth/refresh --------------------------------------------------------------------------


async def test_refresh_rotates_both_tokens(api: Api, keys: Keys) -> None:
    first = await issue(api, keys.sandbox_pk, keys.sandbox_sk)
    status, second = await refresh(api, first["refreshToken"])
    assert status == 200, second
    assert second["tokenType"] == "Bearer"
    assert second["expiresIn"] == 3600
    assert second["refreshExpiresIn"] == 2_592_000
    assert second["environment"] == "sandbox"
    assert second["accessToken"] != first["accessToken"]
    assert second["refreshToken"] != first["refreshToken"]
    status, ping, _ = await api.get("/ping", second["accessToken"])
    assert status == 200 and ping["merchant"] == MERCHANT
    # The new one keeps the chain going (once) ...
    status, third = await refresh(api, second["refreshToken"])
    assert status == 200, third
    # ... and each old one stopped working once it was replaced (presenting one again also
    # revokes the chain: see the next test).
    for used in (first, second):
        status, body = await refresh(api, used["refreshToken"])
        assert_refused(status, body)


async def test_reusing_a_rotated_refresh_token_revokes_the_whole_chain(
    api: Api, keys: Keys
) -> None:
    """OAuth 2.0 Security BCP (refresh token rotation): a rotated token presented again means
    two parties hold the chain, and the server cannot tell which is the thief, so the token
    that replaced it (and any later one) stops working too. Another chain is not touched."""
    first = await issue(api, keys.sandbox_pk, keys.sandbox_sk)
    other = await issue(api, keys.sandbox_pk, keys.sandbox_sk)
    _, second = await refresh(api, first["refreshToken"])
    _, third = await refresh(api, second["refreshToken"])
    status, replay = await refresh(api, first["refreshToken"])
    assert_refused(status, replay)
    for token in (second["refreshToken"], third["refreshToken"]):
        status, body = await refresh(api, token)
        assert_refused(status, body)
    assert "revoked" in replay["error"]["message"]
    status, fresh = await refresh(api, other["refreshToken"])
    assert status == 200, fresh


async def test_refresh_keeps_the_production_environment(api: Api, keys: Keys) -> None:
    first = await issue(api, keys.live_pk, keys.live_sk)
    status, second = await refresh(api, first["refreshToken"])
    assert status == 200 and second["environment"] == "production"
    status, ping, _ = await api.get("/ping", second["accessToken"])
    assert status == 200 and ping["environment"] == "production"


@pytest.mark.parametrize("payload", [{}, {"refreshToken": ""}, {"refreshToken": 42}])
async def test_refresh_missing_field_is_400(api: Api, payload: dict[str, Any]) -> None:
    status, body, _ = await api.post("/auth/refresh", json=payload)
    error = assert_error(status, body, 400, "invalid_request")
    assert error["details"]["issues"][0]["path"] == "refreshToken"


async def test_refresh_with_garbage_or_an_access_token_is_401(api: Api, keys: Keys) -> None:
    pair = await issue(api, keys.sandbox_pk, keys.sandbox_sk)
    for bogus in ("rt_nope", "nope", pair["accessToken"], keys.sandbox_sk):
        status, body = await refresh(api, bogus)
        assert_refused(status, body)
    # None of that burnt the real refresh token.
    status, body = await refresh(api, pair["refreshToken"])
    assert status == 200, body


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/ping"), ("GET", "/me"), ("GET", "/payment-methods"), ("POST", "/payments")],
)
async def test_refresh_token_as_bearer_is_invalid_api_key(
    api: Api, keys: Keys, method: str, path: str
) -> None:
    pair = await issue(api, keys.sandbox_pk, keys.sandbox_sk)
    status, body, _ = await api.call(
        method, path, pair["refreshToken"], json={"amount": 5, "paymentMethodId": "1001"}
    )
    assert_error(status, body, 401, "invalid_api_key")


# -- expiry on the simulator clock ---------------------------------------------------------------


async def test_access_token_expires_after_an_hour_of_simulated_time(api: Api, keys: Keys) -> None:
    pair = await issue(api, keys.sandbox_pk, keys.sandbox_sk)
    await api.advance(3590)
    status, body, _ = await api.get("/ping", pair["accessToken"])
    assert status == 200, body
    await api.advance(11)  # 3601 s after issue
    status, body, _ = await api.get("/ping", pair["accessToken"])
    assert_error(status, body, 401, "token_expired")
    status, body, _ = await api.get("/me", pair["accessToken"])
    assert_error(status, body, 401, "token_expired")
    # The refresh token outlives the access token and yields a working one.
    status, fresh = await refresh(api, pair["refreshToken"])
    assert status == 200, fresh
    status, body, _ = await api.get("/ping", fresh["accessToken"])
    assert status == 200, body
    # Raw keys never expire.
    status, body, _ = await api.get("/ping", keys.sandbox_sk)
    assert status == 200, body


async def test_refresh_token_expires_after_30_days_of_simulated_time(api: Api, keys: Keys) -> None:
    early = await issue(api, keys.sandbox_pk, keys.sandbox_sk)
    late = await issue(api, keys.sandbox_pk, keys.sandbox_sk)
    await api.advance(REFRESH_SECONDS - 60)
    status, rotated = await refresh(api, early["refreshToken"])
    assert status == 200, rotated  # one minute before the end: still valid
    await api.advance(61)
    status, body = await refresh(api, late["refreshToken"])
    assert_error(status, body, 401, "token_expired")
    # A refresh token minted later has its own 30 days.
    status, body = await refresh(api, rotated["refreshToken"])
    assert status == 200, body


# -- altered, foreign and garbage tokens ---------------------------------------------------------


async def test_altered_signature_is_invalid_token(api: Api, keys: Keys) -> None:
    token = (await issue(api, keys.sandbox_pk, keys.sandbox_sk))["accessToken"]
    header, payload, signature = token.split(".")
    altered = [
        f"{header}.{payload}.{_swap(signature[0])}{signature[1:]}",
        f"{header}.{payload}.{signature[:10]}{_swap(signature[10])}{signature[11:]}",
        f"{header}.{payload}.{signature}=",  # padding is not part of the issued token
        f"{header}.{payload}.{signature[:5]}!{signature[5:]}",  # a stray character
        f"{header}.{payload}.",
        f"{header}.{payload}.{signature[:-1]}",
    ]
    # Every other last character: some differ from the issued one only in unused bits.
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    altered += [f"{header}.{payload}.{signature[:-1]}{c}" for c in alphabet if c != signature[-1]]
    for bad in altered:
        status, body, _ = await api.get("/ping", bad)
        assert_error(status, body, 401, "invalid_token")
    status, body, _ = await api.get("/ping", token)
    assert status == 200, body


async def test_altered_payload_is_invalid_token(api: Api, keys: Keys) -> None:
    token = (await issue(api, keys.sandbox_pk, keys.sandbox_sk))["accessToken"]
    header, payload, signature = token.split(".")
    claims = _claims(token)
    forged_claims = [
        {**claims, "exp": claims["exp"] + 10 * 3600},  # longer life
        {**claims, "mid": "mer_fiestaboletos"},  # another merchant
        {**claims, "env": "production"},
    ]
    altered = [f"{header}.{_b64(json.dumps(c).encode())}.{signature}" for c in forged_claims]
    altered.append(f"{header}.{payload[:8]}{_swap(payload[8])}{payload[9:]}.{signature}")
    # alg "none" with no signature: never accepted.
    none_header = _b64(json.dumps({"alg": "none", "typ": "JWT"}).encode())
    altered += [f"{none_header}.{payload}.", f"{none_header}.{payload}.{signature}"]
    for bad in altered:
        status, body, _ = await api.get("/ping", bad)
        assert_error(status, body, 401, "invalid_token")


async def test_token_from_another_data_dir_is_invalid_token(
    api: Api, keys: Keys, aiohttp_client: Any, tmp_path: Path
) -> None:
    other = Api(
        await aiohttp_client(
            create_app(
                Settings(data_dir=tmp_path / "other", tick_seconds=0, seed=99, rate_limit=False)
            )
        )
    )
    foreign = await issue(other, keys.sandbox_pk, keys.sandbox_sk)
    status, body, _ = await other.get("/ping", foreign["accessToken"])
    assert status == 200, body  # valid where it was issued ...
    status, body, _ = await api.get("/ping", foreign["accessToken"])
    assert_error(status, body, 401, "invalid_token")  # ... signed with another secret here
    status, body = await refresh(api, foreign["refreshToken"])
    assert_refused(status, body)


@pytest.mark.parametrize(
    "value",
    ["abc", "a.b.c", "..", "a.b", "a.b.c.d", "eyJhbGciOiJIUzI1NiJ9.e30.AAAA", "🙂" * 3, "%00%01"],
)
async def test_garbage_bearer_is_invalid_token(api: Api, value: str) -> None:
    status, body, _ = await api.get("/ping", value.encode("utf-8").decode("latin-1"))
    assert_error(status, body, 401, "invalid_token")


@pytest.mark.parametrize(
    "key",
    [
        "sk_test_000000000000000000000000",
        "sk_live_000000000000000000000000",
        "pk_test_000000000000000000000000",
        "pk_live_000000000000000000000000",
        Keys.sandbox_sk + "x",
        Keys.sandbox_sk[:-1],
    ],
)
async def test_unknown_raw_key_is_invalid_api_key(api: Api, key: str) -> None:
    status, body, _ = await api.get("/ping", key)
    assert_error(status, body, 401, "invalid_api_key")


@pytest.mark.parametrize(
    "authorization",
    [None, "", "   ", "Bearer", "Bearer ", "Basic c2tfdGVzdDp4", "Token " + Keys.sandbox_sk],
)
async def test_no_usable_authorization_is_missing_credentials(
    api: Api, authorization: str | None
) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    for path in ("/ping", "/me", "/payment-methods"):
        status, body, _ = await api.get(path, headers=headers)
        assert_error(status, body, 401, "missing_credentials")


async def test_raw_key_without_a_scheme_is_missing_credentials(api: Api, keys: Keys) -> None:
    status, body, _ = await api.get("/ping", headers={"Authorization": keys.sandbox_sk})
    assert_error(status, body, 401, "missing_credentials")


async def test_bearer_scheme_is_case_insensitive(api: Api, keys: Keys) -> None:
    status, body, _ = await api.get("/ping", headers={"Authorization": f"bearer {keys.sandbox_sk}"})
    assert status == 200, body


# -- key kinds -----------------------------------------------------------------------------------


async def test_publishable_key_on_any_auth_endpoints(api: Api, keys: Keys) -> None:
    status, ping, _ = await api.get("/ping", keys.sandbox_pk)
    assert status == 200, ping
    assert ping["keyKind"] == "publishable" and ping["environment"] == "sandbox"
    assert keys.sandbox_pk not in json.dumps(ping)
    status, methods, _ = await api.get("/payment-methods", keys.sandbox_pk)
    assert status == 200 and methods["count"] > 0, methods
    status, ping, _ = await api.get("/ping", keys.live_pk)
    assert (
        status == 200 and ping["environment"] == "production" and ping["keyKind"] == "publishable"
    )


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/me"),
        ("GET", "/me/balance"),
        ("POST", "/payments"),
        ("GET", "/payments"),
        ("GET", "/payments/TXN-UNKNOWN"),
        ("POST", "/transactions"),
        ("GET", "/transactions"),
        ("POST", "/payments/TXN-UNKNOWN/refund"),
        ("POST", "/payments/TXN-UNKNOWN/simulate"),
    ],
)
async def test_publishable_key_on_secret_endpoints_is_key_kind_not_allowed(
    api: Api, keys: Keys, method: str, path: str
) -> None:
    payload = {"amount": 50, "paymentMethodId": "1001", "action": "paid"}
    status, body, _ = await api.call(method, path, keys.sandbox_pk, json=payload)
    assert_error(status, body, 403, "key_kind_not_allowed")


async def test_publishable_key_creates_nothing(api: Api, keys: Keys) -> None:
    await api.post("/payments", keys.sandbox_pk, json={"amount": 50, "paymentMethodId": "1001"})
    status, page, _ = await api.get("/payments", keys.sandbox_sk)
    assert status == 200 and page["pagination"]["total"] == 0, page


# -- production_key_refused ----------------------------------------------------------------------


async def test_live_credentials_on_sandbox_only_endpoints(api: Api, keys: Keys) -> None:
    tx = await api.pay(keys.live_sk)
    live_token = (await issue(api, keys.live_pk, keys.live_sk))["accessToken"]
    for credential in (keys.live_sk, live_token, keys.promoted_live_sk):
        for tx_id in (tx["transactionId"], "TXN-UNKNOWN"):
            status, body, _ = await api.post(
                f"/payments/{tx_id}/simulate", credential, json={"action": "paid"}
            )
            assert_error(status, body, 400, "production_key_refused")
        status, body, _ = await api.get("/_sim/clock", credential)
        assert_error(status, body, 400, "production_key_refused")
        status, body, _ = await api.post("/_sim/clock/advance", credential, json={"seconds": 60})
        assert_error(status, body, 400, "production_key_refused")
    # Nothing moved: the live payment is still pending.
    status, body, _ = await api.get(f"/payments/{tx['transactionId']}", keys.live_sk)
    assert status == 200 and body["status"] == "pending", body


async def test_sandbox_credentials_drive_the_sandbox_only_endpoints(api: Api, keys: Keys) -> None:
    tx = await api.pay()
    token = (await issue(api, keys.sandbox_pk, keys.sandbox_sk))["accessToken"]
    status, body, _ = await api.post(
        f"/payments/{tx['transactionId']}/simulate", token, json={"action": "paid"}
    )
    assert status == 200 and body["status"] == "completed", body
    status, body, _ = await api.get("/_sim/clock", token)
    assert status == 200 and "now" in body, body


# -- environment_mismatch ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/ping"),
        ("GET", "/me"),
        ("GET", "/me/balance"),
        ("GET", "/payment-methods"),
        ("POST", "/payments"),
        ("GET", "/payments"),
    ],
)
async def test_promoted_shop_sandbox_key_is_environment_mismatch(
    api: Api, keys: Keys, method: str, path: str
) -> None:
    payload = {"amount": 50, "paymentMethodId": "1001"}
    for key in (keys.promoted_sandbox_sk, PROMOTED_SANDBOX_PK):
        status, body, _ = await api.call(method, path, key, json=payload)
        assert status == 403, body
        assert_error(status, body, 403, "environment_mismatch")


async def test_promoted_shop_live_key_works(api: Api, keys: Keys) -> None:
    status, body, _ = await api.get("/ping", keys.promoted_live_sk)
    assert status == 200 and body["environment"] == "production", body
    await api.pay(keys.promoted_live_sk)


async def test_promoted_shop_sandbox_pair_token_cannot_be_used(api: Api, keys: Keys) -> None:
    status, body, _ = await api.post(
        "/auth/token", json={"apiKey": PROMOTED_SANDBOX_PK, "secretKey": keys.promoted_sandbox_sk}
    )
    if status == 200:  # refused at issue time or at use time; never usable
        status, body, _ = await api.get("/ping", body["accessToken"])
    assert_error(status, body, 403, "environment_mismatch")


async def test_legacy_key_naming_a_promoted_shop_is_environment_mismatch(
    api: Api, keys: Keys
) -> None:
    status, body, _ = await api.post(
        "/payments",
        keys.legacy_sk,
        json={"amount": 50, "paymentMethodId": "1001", "shopId": "shp_mazul_app"},
    )
    assert_error(status, body, 403, "environment_mismatch")


# -- shop_required (merchant-wide legacy key) ----------------------------------------------------


async def test_legacy_key_needs_a_shop(api: Api, keys: Keys) -> None:
    status, ping, _ = await api.get("/ping", keys.legacy_sk)
    assert status == 200 and ping["merchant"] == MERCHANT and ping["keyKind"] == "secret"
    status, body, _ = await api.post(
        "/payments", keys.legacy_sk, json={"amount": 50, "paymentMethodId": "1001"}
    )
    assert_error(status, body, 401, "shop_required")
    status, body, _ = await api.get("/payment-methods", keys.legacy_sk)
    assert_error(status, body, 401, "shop_required")


async def test_legacy_key_with_its_merchants_shop_works(api: Api, keys: Keys) -> None:
    tx = await api.pay(keys.legacy_sk, shopId="shp_mazul_tienda")
    # The payment belongs to that shop: its own key sees it.
    status, body, _ = await api.get(f"/payments/{tx['transactionId']}", keys.sandbox_sk)
    assert status == 200 and body["id"] == tx["transactionId"], body
    status, listing, _ = await api.get("/payment-methods?shopId=shp_mazul_tienda", keys.legacy_sk)
    assert status == 200 and listing["shop"]["id"] == "shp_mazul_tienda", listing


async def test_legacy_key_with_another_merchants_shop_is_forbidden(api: Api, keys: Keys) -> None:
    payload = {"amount": 50, "paymentMethodId": "1001", "shopId": "shp_fiesta_taquilla"}
    status, body, _ = await api.post("/payments", keys.legacy_sk, json=payload)
    assert_error(status, body, 403, "forbidden")
    status, body, _ = await api.get("/payment-methods?shopId=shp_fiesta_taquilla", keys.legacy_sk)
    assert_error(status, body, 403, "forbidden")
    # Nothing was created for anyone.
    status, page, _ = await api.get("/payments", keys.other_sk)
    assert status == 200 and page["pagination"]["total"] == 0, page


async def test_legacy_key_shop_edge_cases(api: Api, keys: Keys) -> None:
    base = {"amount": 50, "paymentMethodId": "1001"}
    status, body, _ = await api.post(
        "/payments", keys.legacy_sk, json={**base, "shopId": "shp_mazul_outlet"}
    )
    assert_error(status, body, 403, "shop_suspended")
    status, body, _ = await api.post(
        "/payments", keys.legacy_sk, json={**base, "shopId": "shp_nope"}
    )
    assert_error(status, body, 404, "shop_not_found")


async def test_shop_key_cannot_act_for_a_sibling_shop(api: Api, keys: Keys) -> None:
    payload = {"amount": 50, "paymentMethodId": "1001", "shopId": "shp_mazul_outlet"}
    status, body, _ = await api.post("/payments", keys.sandbox_sk, json=payload)
    assert_error(status, body, 403, "forbidden")


# -- merchant and shop standing ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sk", "pk", "code"),
    [
        (Keys.suspended_merchant_sk, SUSPENDED_MERCHANT_PK, "merchant_suspended"),
        (Keys.suspended_shop_sk, SUSPENDED_SHOP_PK, "shop_suspended"),
    ],
)
async def test_suspended_standing_is_403(api: Api, sk: str, pk: str, code: str) -> None:
    for key in (sk, pk):
        for path in ("/ping", "/payment-methods"):
            status, body, _ = await api.get(path, key)
            assert_error(status, body, 403, code)
    status, body, _ = await api.get("/me", sk)
    assert_error(status, body, 403, code)
    status, body, _ = await api.post(
        "/payments", sk, json={"amount": 50, "paymentMethodId": "1001"}
    )
    assert_error(status, body, 403, code)
    status, body, _ = await api.post("/auth/token", json={"apiKey": pk, "secretKey": sk})
    assert_error(status, body, 403, code)


# -- sandbox and production data never mix -------------------------------------------------------


async def test_sandbox_payment_is_invisible_to_live_key(api: Api, keys: Keys) -> None:
    tx = await api.pay(keys.sandbox_sk)
    tx_id = tx["transactionId"]
    for path in (f"/payments/{tx_id}", f"/transactions/{tx_id}"):
        status, body, _ = await api.get(path, keys.live_sk)
        assert_error(status, body, 404, "transaction_not_found")
    status, body, _ = await api.post(f"/payments/{tx_id}/refund", keys.live_sk, json={})
    assert_error(status, body, 404, "transaction_not_found")
    for path in ("/payments", "/transactions"):
        status, page, _ = await api.get(path, keys.live_sk)
        assert status == 200 and page["pagination"]["total"] == 0, page
        assert tx_id not in {row["id"] for row in page["data"]}
    status, page, _ = await api.get("/payments", keys.sandbox_sk)
    assert [row["id"] for row in page["data"]] == [tx_id]


async def test_live_payment_is_invisible_to_sandbox_key(api: Api, keys: Keys) -> None:
    tx = await api.pay(keys.live_sk)
    tx_id = tx["transactionId"]
    sandbox_token = (await issue(api, keys.sandbox_pk, keys.sandbox_sk))["accessToken"]
    for credential in (keys.sandbox_sk, sandbox_token, keys.legacy_sk):
        status, body, _ = await api.get(f"/payments/{tx_id}", credential)
        assert_error(status, body, 404, "transaction_not_found")
        status, page, _ = await api.get("/payments", credential)
        assert status == 200 and tx_id not in {row["id"] for row in page["data"]}, page
        assert page["pagination"]["total"] == 0
    status, body, _ = await api.post(
        f"/payments/{tx_id}/simulate", keys.sandbox_sk, json={"action": "paid"}
    )
    assert_error(status, body, 404, "transaction_not_found")
    status, body, _ = await api.get(f"/payments/{tx_id}", keys.live_sk)
    assert status == 200 and body["status"] == "pending", body


async def test_balances_are_per_environment(api: Api, keys: Keys) -> None:
    tx = await api.pay(keys.sandbox_sk)
    status, body, _ = await api.post(
        f"/payments/{tx['transactionId']}/simulate", keys.sandbox_sk, json={"action": "paid"}
    )
    assert status == 200, body
    status, sandbox, _ = await api.get("/me/balance", keys.sandbox_sk)
    assert status == 200 and sandbox["feeSummary"]["grossVolume"] == 50, sandbox
    status, live, _ = await api.get("/me/balance", keys.live_sk)
    assert status == 200 and live["feeSummary"]["grossVolume"] == 0, live
    assert live["movements"] == []


async def test_another_merchants_transaction_is_not_found(api: Api, keys: Keys) -> None:
    sandbox_tx = (await api.pay(keys.sandbox_sk))["transactionId"]
    live_tx = (await api.pay(keys.live_sk))["transactionId"]
    for key, tx_id in ((keys.other_sk, sandbox_tx), (keys.other_live_sk, live_tx)):
        for path in (f"/payments/{tx_id}", f"/transactions/{tx_id}"):
            status, body, _ = await api.get(path, key)
            assert_error(status, body, 404, "transaction_not_found")
        status, body, _ = await api.post(f"/payments/{tx_id}/refund", key, json={})
        assert_error(status, body, 404, "transaction_not_found")
        status, page, _ = await api.get("/payments", key)
        assert status == 200 and page["pagination"]["total"] == 0, page
    status, body, _ = await api.post(
        f"/payments/{sandbox_tx}/simulate", keys.other_sk, json={"action": "paid"}
    )
    assert_error(status, body, 404, "transaction_not_found")
    # The owner still sees it, unchanged.
    status, body, _ = await api.get(f"/payments/{sandbox_tx}", keys.sandbox_sk)
    assert status == 200 and body["status"] == "pending", body


async def test_sibling_shop_transaction_is_not_found(api: Api, keys: Keys) -> None:
    # Same merchant, another shop (shp_mazul_app, production): a shop key sees only its shop.
    tx_id = (await api.pay(keys.promoted_live_sk))["transactionId"]
    status, body, _ = await api.get(f"/payments/{tx_id}", keys.live_sk)
    assert_error(status, body, 404, "transaction_not_found")
    status, page, _ = await api.get("/payments", keys.live_sk)
    assert status == 200 and tx_id not in {row["id"] for row in page["data"]}, page
