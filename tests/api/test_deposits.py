"""Deposit accounts through the HTTP API: deposit methods, get-or-create (every validation of the
spec, concurrency), list, get, deposits, and POST /_sim/deposits crediting a normal pay-in."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from simulator.domain.documents import is_valid_clabe
from simulator.http.keys import BUS, DEPOSITS
from tests.conftest import KEYS, Api, Keys, assert_error

DAY = 86_400
# shp_mazul_tienda (KEYS.sandbox_sk): dm_spei_stp and dm_spei_alt, phone required.
# shp_fiesta_taquilla (KEYS.other_sk): dm_spei_stp only. shp_lverde_loja (restricted): none.
BASE = {"name": "Ana López", "email": "ana@example.com", "phone": "+52 55 1234 5678"}
STP = {**BASE, "depositMethodId": "dm_spei_stp"}


def d(value: Any) -> Decimal:
    return Decimal(str(value))


async def create(
    api: Api, ref: str = "user-1", key: str = KEYS.sandbox_sk, **fields: Any
) -> tuple[int, Any]:
    # shp_mazul_tienda's keys (sandbox and live) have two deposit methods: pick one.
    two_methods = key in (KEYS.sandbox_sk, KEYS.live_sk)
    body = {"endUserRef": ref, **(STP if two_methods else BASE), **fields}
    status, out, _ = await api.post("/me/deposit-accounts", key, json=body)
    return status, out


async def account(api: Api, ref: str = "user-1", key: str = KEYS.sandbox_sk, **fields: Any) -> Any:
    status, out = await create(api, ref, key, **fields)
    assert status == 201, out
    return out["account"]


async def deposit(
    api: Api, clabe: str, amount: Any = 1000, key: str = KEYS.sandbox_sk, **extra: Any
) -> tuple[int, Any]:
    body = {"clabe": clabe, "amount": amount, **extra}
    status, out, _ = await api.post("/_sim/deposits", key, json=body)
    return status, out


# ---------------------------------------------------------------------------- deposit methods


async def test_deposit_methods_of_the_shop(api: Api, keys: Keys) -> None:
    status, body, _ = await api.get("/me/deposit-methods", keys.sandbox_sk)
    assert status == 200, body
    assert body == {
        "methods": [
            {
                "depositMethodId": "dm_spei_stp",
                "method": "spei",
                "name": "SPEI (STP)",
                "country": "MX",
                "currency": "MXN",
            },
            {
                "depositMethodId": "dm_spei_alt",
                "method": "spei",
                "name": "SPEI (banco alterno)",
                "country": "MX",
                "currency": "MXN",
            },
        ]
    }
    _, body, _ = await api.get("/me/deposit-methods", keys.other_sk)
    assert [m["depositMethodId"] for m in body["methods"]] == ["dm_spei_stp"]
    _, body, _ = await api.get("/me/deposit-methods", keys.restricted_sk)
    assert body == {"methods": []}


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/me/deposit-methods"),
        ("GET", "/me/deposit-accounts"),
        ("GET", "/me/deposit-accounts/eda_x"),
        ("GET", "/me/deposit-accounts/eda_x/deposits"),
        ("POST", "/me/deposit-accounts"),
        ("POST", "/_sim/deposits"),
    ],
)
async def test_a_merchant_wide_credential_is_refused(
    api: Api, keys: Keys, method: str, path: str
) -> None:
    json = {"endUserRef": "u", **STP} if path == "/me/deposit-accounts" else None
    if path == "/_sim/deposits":
        json = {"clabe": "646180000000000009", "amount": 10}
    status, body, _ = await api.call(method, path, keys.legacy_sk, json=json)
    error = assert_error(status, body, 400, "invalid_request")
    assert error["details"]["reason"] == "shop_credential_required"


async def test_deposit_endpoints_need_a_secret_key(api: Api, keys: Keys) -> None:
    status, body, _ = await api.get("/me/deposit-methods", keys.sandbox_pk)
    assert_error(status, body, 403, "key_kind_not_allowed")
    status, body, _ = await api.post("/me/deposit-accounts", keys.sandbox_pk, json=STP)
    assert_error(status, body, 403, "key_kind_not_allowed")


# ---------------------------------------------------------------------------- create


async def test_create_mints_a_valid_clabe(api: Api, keys: Keys) -> None:
    status, body = await create(
        api,
        documentType="RFC",
        documentId="IXLZ9511197B1",
        country="mx",
        metadata={"plan": "gold"},
    )
    assert status == 201, body
    assert body["created"] is True
    acct = body["account"]
    assert acct["id"].startswith("eda_")
    assert len(acct["clabe"]) == 18 and is_valid_clabe(acct["clabe"])
    assert acct["clabe"].startswith("646")
    assert acct["bank"] == "STP"  # dm_spei_stp's network states the institution
    assert acct["currency"] == "MXN" and acct["country"] == "MX"
    assert acct["methodName"] == "SPEI (STP)"
    assert acct["beneficiary"] == {"name": "Ana López", "email": "ana@example.com"}
    assert acct["customer"] == {
        "name": "Ana López",
        "email": "ana@example.com",
        "phone": "+52 55 1234 5678",
        "documentType": "RFC",
        "documentId": "IXLZ9511197B1",
        "country": "MX",
    }
    assert acct["metadata"] == {"plan": "gold"}
    assert acct["status"] == "active" and acct["environment"] == "sandbox"
    assert acct["createdAt"] == acct["updatedAt"]
    assert "stats" not in acct


async def test_bank_is_never_inferred_from_the_clabe(api: Api) -> None:
    acct = await account(api, depositMethodId="dm_spei_alt")
    assert acct["clabe"].startswith("012") and is_valid_clabe(acct["clabe"])
    assert acct["bank"] is None  # 012 is BBVA México's prefix, but the network said nothing


async def test_country_is_uppercased_as_sent(api: Api) -> None:
    assert (await account(api, "a", country="mex"))["customer"]["country"] == "MEX"
    assert (await account(api, "b", country=" Mx "))["customer"]["country"] == "MX"


async def test_get_or_create_returns_the_existing_account(api: Api, keys: Keys) -> None:
    first = await account(api)
    status, body, _ = await api.post(
        "/me/deposit-accounts", keys.sandbox_sk, json={"endUserRef": "user-1", "name": "Other"}
    )
    # 200, created false; email and the shop's required phone are not needed any more.
    assert status == 200, body
    assert body == {"created": False, "account": first}


async def test_one_account_per_end_user_per_shop(api: Api, keys: Keys) -> None:
    mine = await account(api)
    theirs = await account(api, key=keys.other_sk)  # same endUserRef, another shop
    assert mine["id"] != theirs["id"] and mine["clabe"] != theirs["clabe"]
    live = await account(api, key=keys.live_sk)  # and another environment
    assert live["environment"] == "production" and live["id"] != mine["id"]


@pytest.mark.parametrize(
    ("drop", "required"),
    [
        (["email"], ["email"]),
        (["phone"], ["phone"]),  # this shop's setup requires it
        (["email", "phone"], ["email", "phone"]),
        (["endUserRef"], ["endUserRef"]),
        (["name"], ["name"]),
    ],
)
async def test_missing_fields_are_listed_and_nothing_is_created(
    api: Api, keys: Keys, drop: list[str], required: list[str]
) -> None:
    body = {"endUserRef": "user-1", **STP}
    for key in drop:
        body.pop(key)
    status, out, _ = await api.post("/me/deposit-accounts", keys.sandbox_sk, json=body)
    error = assert_error(status, out, 400, "invalid_request")
    assert error["details"]["required"] == required
    _, page, _ = await api.get("/me/deposit-accounts", keys.sandbox_sk)
    assert page["pagination"]["total"] == 0


async def test_phone_is_required_only_by_shops_that_ask(api: Api, keys: Keys) -> None:
    status, body, _ = await api.post(
        "/me/deposit-accounts",
        keys.other_sk,
        json={"endUserRef": "u", "name": "Ana", "email": "ana@example.com"},
    )
    assert status == 201, body


async def test_blank_strings_count_as_missing(api: Api) -> None:
    status, body = await create(api, phone="   ")
    assert assert_error(status, body, 400, "invalid_request")["details"]["required"] == ["phone"]


@pytest.mark.parametrize(("field", "value"), [("email", ""), ("email", "  "), ("country", "")])
async def test_a_blank_email_or_country_is_invalid_whether_or_not_the_account_exists(
    api: Api, field: str, value: str
) -> None:
    """`email` is `format: email` and `country` a code: blank is a bad value, not an absent one
    (only null is), so it is refused before the end user's account is looked up."""
    for exists in (False, True):
        status, body = await create(api, **{field: value})
        error = assert_error(status, body, 400, "invalid_request")
        assert [issue["path"] for issue in error["details"]["issues"]] == [field], exists
        if not exists:
            _, page, _ = await api.get("/me/deposit-accounts", KEYS.sandbox_sk)
            assert page["pagination"]["total"] == 0
            await account(api)
    status, body = await create(api, email=None, country=None)
    assert status == 200 and body["created"] is False, body


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"endUserRef": "r" * 201}, "endUserRef"),
        ({"name": "n" * 201}, "name"),
        ({"phone": "1" * 41}, "phone"),
        ({"documentType": "t" * 21}, "documentType"),
        ({"documentId": "1" * 61}, "documentId"),
        ({"email": "not-an-email"}, "email"),
        ({"email": "a" * 250 + "@x.com"}, "email"),
        ({"country": "ZZ"}, "country"),
        ({"country": "Mexico"}, "country"),
        ({"name": 42}, "name"),
        ({"metadata": {f"k{i}": "v" for i in range(21)}}, "metadata"),
        ({"metadata": {"k": "v" * 501}}, "metadata"),
        ({"metadata": {"k": 1}}, "metadata"),
        ({"metadata": ["k"]}, "metadata"),
        ({"metadata": {"k" * 41: "v"}}, "metadata"),
        ({"shopId": "shp_mazul_tienda"}, "shopId"),
    ],
)
async def test_field_rules(api: Api, fields: dict[str, Any], path: str) -> None:
    status, body = await create(api, **fields)
    error = assert_error(status, body, 400, "invalid_request")
    assert path in [issue["path"] for issue in error["details"]["issues"]]


async def test_the_limits_themselves_are_accepted(api: Api) -> None:
    acct = await account(
        api,
        "r" * 200,
        name="n" * 200,
        phone="1" * 40,
        documentType="t" * 20,
        documentId="1" * 60,
        metadata={f"key{i}": "v" * 500 for i in range(20)},
    )
    assert len(acct["metadata"]) == 20 and acct["endUserRef"] == "r" * 200


async def test_two_methods_need_a_choice(api: Api, keys: Keys) -> None:
    status, body, _ = await api.post(
        "/me/deposit-accounts", keys.sandbox_sk, json={"endUserRef": "u", **BASE}
    )
    error = assert_error(status, body, 422, "deposit_method_required")
    ids = [m["depositMethodId"] for m in error["details"]["depositMethods"]]
    assert ids == ["dm_spei_stp", "dm_spei_alt"]


async def test_one_method_is_used_without_a_choice(api: Api, keys: Keys) -> None:
    acct = await account(api, key=keys.other_sk)
    assert acct["methodName"] == "SPEI (STP)"


@pytest.mark.parametrize(
    ("key_name", "method_id"), [("sandbox_sk", "dm_nowhere"), ("other_sk", "dm_spei_alt")]
)
async def test_a_method_not_enabled_is_refused_never_replaced(
    api: Api, keys: Keys, key_name: str, method_id: str
) -> None:
    status, body = await create(api, key=getattr(keys, key_name), depositMethodId=method_id)
    error = assert_error(status, body, 422, "deposit_method_unavailable")
    assert error["param"] == "depositMethodId"
    enabled = [m["depositMethodId"] for m in error["details"]["depositMethods"]]
    assert method_id not in enabled and enabled
    _, page, _ = await api.get("/me/deposit-accounts", getattr(keys, key_name))
    assert page["pagination"]["total"] == 0


async def test_deposit_method_id_must_be_a_string(api: Api) -> None:
    status, body = await create(api, depositMethodId=5)
    assert_error(status, body, 400, "invalid_request")


async def test_a_method_not_enabled_is_refused_for_an_existing_account_too(api: Api) -> None:
    await account(api)
    status, body = await create(api, depositMethodId="dm_nowhere")
    assert_error(status, body, 422, "deposit_method_unavailable")


async def test_a_shop_without_deposit_methods(api: Api, keys: Keys) -> None:
    status, body = await create(api, key=keys.restricted_sk)
    assert_error(status, body, 422, "deposit_accounts_unavailable")


async def test_concurrent_calls_never_create_two(api: Api, keys: Keys) -> None:
    """A delay between the lookup and the insert (the upstream provisioning) must not let a
    second call for the same end user through."""
    service = api.client.server.app[DEPOSITS]
    calls = 0

    async def slow_provisioning() -> None:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0.05)

    service.before_insert = slow_provisioning
    results = await asyncio.gather(*(create(api, "same-user") for _ in range(10)))
    statuses = sorted(status for status, _ in results)
    assert statuses == [200] * 9 + [201]
    assert len({body["account"]["id"] for _, body in results}) == 1
    assert calls == 1
    _, page, _ = await api.get("/me/deposit-accounts?endUserRef=same-user", keys.sandbox_sk)
    assert page["pagination"]["total"] == 1


async def test_concurrent_calls_for_different_users_all_create(api: Api) -> None:
    service = api.client.server.app[DEPOSITS]

    async def slow_provisioning() -> None:
        await asyncio.sleep(0.02)

    service.before_insert = slow_provisioning
    results = await asyncio.gather(*(create(api, f"user-{i}") for i in range(8)))
    assert all(status == 201 for status, _ in results)
    assert len({body["account"]["clabe"] for _, body in results}) == 8


async def test_two_accounts_for_one_end_user_are_a_conflict(api: Api, keys: Keys) -> None:
    first = await account(api)
    # Only an operator's mistake (or a corrupt store) could produce this: plant it directly.
    service = api.client.server.app[DEPOSITS]
    twin = {**service._accounts.get(first["id"]), "id": "eda_twin", "clabe": "646180000000000009"}
    service._accounts.put(twin["id"], twin)
    service._index(twin)
    status, body = await create(api)
    error = assert_error(status, body, 409, "deposit_account_conflict")
    assert set(error["details"]["accountIds"]) == {first["id"], "eda_twin"}


# ---------------------------------------------------------------------------- list and get


async def test_list_newest_first_with_filter_and_total(api: Api, keys: Keys) -> None:
    ids = [(await account(api, f"user-{i}"))["id"] for i in range(5)]
    await account(api, "user-x", key=keys.other_sk)  # another shop: never listed here
    status, body, _ = await api.get("/me/deposit-accounts?limit=2&offset=1", keys.sandbox_sk)
    assert status == 200, body
    assert [a["id"] for a in body["accounts"]] == [ids[3], ids[2]]
    assert body["pagination"] == {"total": 5, "limit": 2, "offset": 1}
    _, body, _ = await api.get("/me/deposit-accounts?endUserRef=user-3", keys.sandbox_sk)
    assert [a["id"] for a in body["accounts"]] == [ids[3]]
    assert body["pagination"]["total"] == 1
    _, body, _ = await api.get("/me/deposit-accounts?endUserRef=nobody", keys.sandbox_sk)
    assert body == {"accounts": [], "pagination": {"total": 0, "limit": 50, "offset": 0}}


@pytest.mark.parametrize(("limit", "expected"), [(500, 200), (0, 1), (200, 200), (7, 7)])
async def test_list_limit_is_1_to_200(api: Api, keys: Keys, limit: int, expected: int) -> None:
    _, body, _ = await api.get(f"/me/deposit-accounts?limit={limit}", keys.sandbox_sk)
    assert body["pagination"]["limit"] == expected


async def test_list_include_stats(api: Api, keys: Keys) -> None:
    acct = await account(api)
    _, body, _ = await api.get("/me/deposit-accounts?include=stats", keys.sandbox_sk)
    assert body["accounts"][0]["stats"] == {
        "deposits": 0,
        "credited": 0,
        "totalUsd": 0,
        "localTotals": [],
        "lastDepositAt": None,
    }
    _, body, _ = await api.get("/me/deposit-accounts", keys.sandbox_sk)
    assert "stats" not in body["accounts"][0]
    status, body, _ = await api.get("/me/deposit-accounts?include=everything", keys.sandbox_sk)
    assert_error(status, body, 400, "invalid_request")
    status, body, _ = await api.get(
        f"/me/deposit-accounts/{acct['id']}?include=stats", keys.sandbox_sk
    )
    assert status == 200 and body["account"]["stats"]["deposits"] == 0


async def test_get_an_account(api: Api, keys: Keys) -> None:
    acct = await account(api)
    status, body, _ = await api.get(f"/me/deposit-accounts/{acct['id']}", keys.sandbox_sk)
    assert status == 200 and body == {"account": acct}


@pytest.mark.parametrize("key_name", ["other_sk", "live_sk", "sandbox_sk"])
async def test_another_shops_account_is_not_found(api: Api, keys: Keys, key_name: str) -> None:
    acct = await account(api, key=keys.other_sk if key_name == "sandbox_sk" else keys.sandbox_sk)
    for path in (
        f"/me/deposit-accounts/{acct['id']}",
        f"/me/deposit-accounts/{acct['id']}/deposits",
    ):
        status, body, _ = await api.get(path, getattr(keys, key_name))
        assert_error(status, body, 404, "deposit_account_not_found")
    status, body, _ = await api.get("/me/deposit-accounts/eda_unknown", keys.sandbox_sk)
    assert_error(status, body, 404, "deposit_account_not_found")


# ---------------------------------------------------------------------------- transfers in


@pytest.fixture
def seen(client: TestClient) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    client.server.app[BUS].subscribe(events.append)
    return events


async def test_a_transfer_in_is_a_normal_payin(
    api: Api, keys: Keys, seen: list[dict[str, Any]]
) -> None:
    acct = await account(api)
    status, body = await deposit(api, acct["clabe"], 1710, payerName="Juan Pérez")
    assert status == 200, body
    tx = body["transaction"]
    assert tx["id"].startswith("TXN-") and tx["status"] == "completed"
    assert tx["userEmail"] == "ana@example.com"  # the beneficiary's, as the spec says
    assert tx["paymentMethodId"] == "1001" and tx["paymentMethod"] == "spei"
    assert tx["amountLocal"] == 1710 and tx["currencyLocal"] == "MXN"
    assert tx["inputCurrency"] == "MXN" and tx["inputAmount"] == 1710
    assert tx["amount"] == 98  # 1710 / 17.10 less the 2 % markup
    assert tx["paymentData"]["clabe"] == acct["clabe"]
    assert tx["paymentData"]["beneficiaryName"] == "Ana López"
    assert tx["fees"]["total"] > 0
    status, got, _ = await api.get(f"/payments/{tx['id']}", keys.sandbox_sk)
    assert status == 200 and got["status"] == "completed"
    _, page, _ = await api.get("/payments?status=completed", keys.sandbox_sk)
    assert [row["id"] for row in page["data"]] == [tx["id"]]
    assert [e["type"] for e in seen] == ["payment.completed"]
    record = body["deposit"]
    assert record["transactionId"] == tx["id"] and record["accountId"] == acct["id"]
    assert record["payerName"] == "Juan Pérez" and record["payerEmail"] is None
    assert record["beneficiaryName"] == "Ana López"
    assert record["beneficiaryEmail"] == "ana@example.com"


async def test_a_transfer_in_credits_the_balance(api: Api, keys: Keys) -> None:
    acct = await account(api)
    _, before, _ = await api.get("/me/balance", keys.sandbox_sk)
    status, body = await deposit(api, acct["clabe"], 1710)
    assert status == 200, body
    tx = body["transaction"]
    _, after, _ = await api.get("/me/balance", keys.sandbox_sk)
    net = d(tx["amount"]) - d(tx["fees"]["total"])
    gained = sum(d(after["balance"][b]) for b in after["balance"]) - sum(
        d(before["balance"][b]) for b in before["balance"]
    )
    assert gained == net  # the reserve is part of the balance (its own bucket)
    assert d(after["balance"]["pending"]) > 0  # settles after the merchant's T+2
    await api.advance(3 * DAY)
    _, settled, _ = await api.get("/me/balance", keys.sandbox_sk)
    assert d(settled["balance"]["available"]) > 0 and d(settled["balance"]["pending"]) == 0


async def test_deposits_and_stats_move(api: Api, keys: Keys) -> None:
    acct = await account(api)
    other = await account(api, "user-2")
    first = (await deposit(api, acct["clabe"], 1000, payerName="A"))[1]
    second = (await deposit(api, acct["clabe"], 500.5, payerEmail="b@example.com"))[1]
    await deposit(api, other["clabe"], 77)
    status, body, _ = await api.get(f"/me/deposit-accounts/{acct['id']}/deposits", keys.sandbox_sk)
    assert status == 200, body
    assert [row["id"] for row in body["deposits"]] == [
        second["deposit"]["id"],
        first["deposit"]["id"],
    ]
    assert body["pagination"] == {"total": 2, "limit": 50, "offset": 0}
    row = body["deposits"][0]
    assert {"beneficiaryName", "beneficiaryEmail", "payerName"} <= set(row)
    assert row["payerEmail"] == "b@example.com" and row["amount"] == 500.5
    _, body, _ = await api.get(
        f"/me/deposit-accounts/{acct['id']}/deposits?limit=1&offset=1", keys.sandbox_sk
    )
    assert [r["id"] for r in body["deposits"]] == [first["deposit"]["id"]]
    _, body, _ = await api.get(
        "/me/deposit-accounts?include=stats&endUserRef=user-1", keys.sandbox_sk
    )
    stats = body["accounts"][0]["stats"]
    assert stats["deposits"] == 2 and stats["credited"] == 2
    total = d(first["transaction"]["amount"]) + d(second["transaction"]["amount"])
    assert d(stats["totalUsd"]) == total
    assert stats["localTotals"] == [{"currency": "MXN", "amount": 1500.5}]
    assert stats["lastDepositAt"] == second["deposit"]["createdAt"]


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"clabe": "646180000000000009", "amount": 10}, 404, "deposit_account_not_found"),
        ({"clabe": "12345", "amount": 10}, 400, "invalid_request"),
        ({"clabe": "646180000000000008", "amount": 10}, 400, "invalid_request"),
        ({"amount": 10}, 400, "invalid_request"),
        ({"clabe": "CLABE", "amount": 10, "extra": 1}, 400, "invalid_request"),
    ],
)
async def test_a_transfer_to_an_unknown_clabe_is_refused(
    api: Api, keys: Keys, body: dict[str, Any], status: int, code: str
) -> None:
    got, out, _ = await api.post("/_sim/deposits", keys.sandbox_sk, json=body)
    assert_error(got, out, status, code)


async def test_a_wrong_clabe_check_digit_is_named_with_the_right_one(api: Api, keys: Keys) -> None:
    body = {"clabe": "646180000000000008", "amount": 10}
    got, out, _ = await api.post("/_sim/deposits", keys.sandbox_sk, json=body)
    issues = assert_error(got, out, 400, "invalid_request")["details"]["issues"]
    assert issues == [
        {"path": "clabe", "message": "the check digit (the 18th) is 8; for these 17 digits it is 9"}
    ]


@pytest.mark.parametrize(
    ("extra", "status", "code"),
    [
        ({"amount": 0}, 400, "amount_invalid"),
        ({"amount": "10"}, 400, "amount_invalid"),
        ({"amount": 10.001}, 400, "amount_invalid"),
        ({"amount": 1e30}, 400, "amount_invalid"),
        ({"amount": None}, 400, "missing_field"),
        ({"payerEmail": "nope"}, 400, "invalid_request"),
        ({"payerName": "p" * 201}, 400, "invalid_request"),
    ],
)
async def test_transfer_in_validation(
    api: Api, keys: Keys, extra: dict[str, Any], status: int, code: str
) -> None:
    acct = await account(api)
    body = {"clabe": acct["clabe"], "amount": 10, **extra}
    got, out, _ = await api.post("/_sim/deposits", keys.sandbox_sk, json=body)
    assert_error(got, out, status, code)


async def test_another_shops_clabe_is_unknown(api: Api, keys: Keys) -> None:
    theirs = await account(api, key=keys.other_sk)
    status, body = await deposit(api, theirs["clabe"])
    assert_error(status, body, 404, "deposit_account_not_found")


async def test_a_disabled_account_takes_no_transfer(api: Api, keys: Keys) -> None:
    acct = await account(api)
    api.client.server.app[DEPOSITS].disable(acct["id"])  # the operator's action, not an API
    status, body = await deposit(api, acct["clabe"])
    error = assert_error(status, body, 422, "deposit_account_disabled")
    assert error["details"] == {"accountId": acct["id"], "status": "disabled"}
    _, got, _ = await api.get(f"/me/deposit-accounts/{acct['id']}", keys.sandbox_sk)
    assert got["account"]["status"] == "disabled"
    _, page, _ = await api.get("/payments", keys.sandbox_sk)
    assert page["data"] == []


async def test_transfers_in_are_sandbox_only(api: Api, keys: Keys) -> None:
    acct = await account(api, key=keys.live_sk)
    status, body, _ = await api.post(
        "/_sim/deposits", keys.live_sk, json={"clabe": acct["clabe"], "amount": 10}
    )
    assert_error(status, body, 400, "production_key_refused")


async def test_the_control_plane_disables_an_account(api: Api, keys: Keys) -> None:
    acct = await account(api)
    path = f"/_sim/deposit-accounts/{acct['id']}/disable"
    status, body, _ = await api.post(path, keys.sandbox_sk)
    assert status == 200 and body["account"]["status"] == "disabled"
    status, again, _ = await api.post(path, keys.sandbox_sk)  # idempotent
    assert status == 200 and again["account"]["status"] == "disabled"
    status, error = await deposit(api, acct["clabe"])
    assert_error(status, error, 422, "deposit_account_disabled")


async def test_the_control_plane_refuses_other_shops_and_live_keys(api: Api, keys: Keys) -> None:
    theirs = await account(api, key=keys.other_sk)
    path = f"/_sim/deposit-accounts/{theirs['id']}/disable"
    status, body, _ = await api.post(path, keys.sandbox_sk)
    assert_error(status, body, 404, "deposit_account_not_found")
    status, body, _ = await api.post(path, keys.live_sk)
    assert_error(status, body, 400, "production_key_refused")
    _, got, _ = await api.get(f"/me/deposit-accounts/{theirs['id']}", keys.other_sk)
    assert got["account"]["status"] == "active"
