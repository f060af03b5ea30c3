"""GET /payments, GET /payments/{id} and their /transactions aliases, against api-spec.txt.

The offset envelope, clamping, newest-first order, every filter alone and combined, and the
tenancy rules (another merchant's or environment's transaction is simply not found).
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

import pytest

from simulator.domain.documents import is_valid_clabe
from tests.conftest import Api, Keys, assert_error

KEYS = Keys()
CPF = "52998224725"
GET_FIELDS = {
    "id",
    "status",
    "amount",
    "currency",
    "amountLocal",
    "currencyLocal",
    "paymentMethodId",
    "paymentMethod",
    "country",
    "fees",
    "settlement",
    "paymentFormUrl",
    "paymentData",
    "timestamps",
    "merchantOrderId",
    "tag1",
    "tag2",
    "tag3",
}
LIST_PATHS = ("/payments", "/transactions")


async def page(
    api: Api, query: str = "", key: str = KEYS.sandbox_sk, path: str = "/payments"
) -> dict[str, Any]:
    status, body, _ = await api.get(f"{path}?{query}" if query else path, key)
    assert status == 200, body
    assert set(body) == {"data", "pagination"}, body
    pagination = body["pagination"]
    assert set(pagination) == {"total", "limit", "offset", "pages"}
    assert pagination["pages"] == math.ceil(pagination["total"] / pagination["limit"])
    return body


async def ids(api: Api, query: str = "", key: str = KEYS.sandbox_sk) -> list[str]:
    return [tx["id"] for tx in (await page(api, query, key))["data"]]


async def simulate(api: Api, tx_id: str, action: str) -> None:
    status, body, _ = await api.post(
        f"/payments/{tx_id}/simulate", KEYS.sandbox_sk, json={"action": action}
    )
    assert status == 200, body


@pytest.fixture
async def mix(api: Api) -> dict[str, str]:
    """Five sandbox payments over three countries, four methods and four statuses."""
    made = {
        "spei_a": await api.pay(merchantOrderId="ORD-A"),
        "pix": await api.pay(paymentMethodId="1006", documentId=CPF, merchantOrderId="ORD-B"),
        "card_us": await api.pay(paymentMethodId="1025", merchantOrderId="ORD-A"),
        "oxxo": await api.pay(paymentMethodId="1002", userEmail="ana@example.mx"),
        "spei_b": await api.pay(merchantOrderId="ORD-C"),
    }
    tx = {name: body["transactionId"] for name, body in made.items()}
    await simulate(api, tx["pix"], "paid")
    await simulate(api, tx["card_us"], "failed")
    await simulate(api, tx["oxxo"], "expired")
    return tx


# -- envelope, order, paging -------------------------------------------------------------------


@pytest.mark.parametrize("path", LIST_PATHS)
async def test_empty_list_envelope(api: Api, path: str) -> None:
    body = await page(api, path=path)
    assert body == {"data": [], "pagination": {"total": 0, "limit": 50, "offset": 0, "pages": 0}}


@pytest.mark.parametrize("path", LIST_PATHS)
async def test_newest_first_with_the_get_shape(api: Api, path: str) -> None:
    made = [await api.pay(amount=10 + i) for i in range(3)]
    body = await page(api, path=path)
    assert [tx["id"] for tx in body["data"]] == [m["transactionId"] for m in reversed(made)]
    assert body["pagination"] == {"total": 3, "limit": 50, "offset": 0, "pages": 1}
    for item in body["data"]:
        assert set(item) >= GET_FIELDS, item
        status, single, _ = await api.get(f"{path}/{item['id']}", KEYS.sandbox_sk)
        assert status == 200 and single == item


@pytest.mark.parametrize(
    ("raw", "limit"),
    [("0", 1), ("-3", 1), ("1", 1), ("7", 7), ("100", 100), ("101", 100), ("1000", 100)],
)
async def test_limit_is_clamped_silently(api: Api, raw: str, limit: int) -> None:
    for _ in range(2):
        await api.pay()
    body = await page(api, f"limit={raw}")
    assert body["pagination"]["limit"] == limit
    assert body["pagination"]["pages"] == math.ceil(2 / limit)
    assert len(body["data"]) == min(2, limit)


async def test_offset_skips_rows(api: Api) -> None:
    made = [(await api.pay(amount=10 + i))["transactionId"] for i in range(5)]
    newest = list(reversed(made))
    assert await ids(api, "offset=2") == newest[2:]
    assert await ids(api, "limit=2&offset=1") == newest[1:3]
    body = await page(api, "limit=2&offset=4")
    assert [tx["id"] for tx in body["data"]] == newest[4:]
    assert body["pagination"] == {"total": 5, "limit": 2, "offset": 4, "pages": 3}
    beyond = await page(api, "offset=10")
    assert beyond["data"] == [] and beyond["pagination"]["total"] == 5
    assert (await page(api, "offset=-1"))["pagination"]["offset"] == 0


@pytest.mark.parametrize(
    "query",
    # An empty value is not a number either (only leaving `limit` out gives the default).
    ["limit=abc", "limit=1.5", "limit=10x", "offset=abc", "offset=2.0", "limit=", "offset="],
)
async def test_non_integer_paging_is_invalid_request(api: Api, query: str) -> None:
    status, body, _ = await api.get(f"/payments?{query}", KEYS.sandbox_sk)
    error = assert_error(status, body, 400, "invalid_request")
    assert error["param"] == query.split("=")[0]


async def test_120_payments_page_correctly(api: Api) -> None:
    made = [(await api.pay(amount=1 + i))["transactionId"] for i in range(120)]
    seen: list[str] = []
    for offset, size in ((0, 50), (50, 50), (100, 20)):
        body = await page(api, f"offset={offset}")
        assert body["pagination"] == {"total": 120, "limit": 50, "offset": offset, "pages": 3}
        assert len(body["data"]) == size
        seen += [tx["id"] for tx in body["data"]]
    assert seen == list(reversed(made))
    full = await page(api, "limit=100&offset=100")
    assert full["pagination"]["pages"] == 2 and len(full["data"]) == 20
    assert [tx["id"] for tx in full["data"]] == list(reversed(made))[100:]


# -- filters -----------------------------------------------------------------------------------


async def test_status_filter(api: Api, mix: dict[str, str]) -> None:
    assert await ids(api, "status=pending") == [mix["spei_b"], mix["spei_a"]]
    assert await ids(api, "status=completed") == [mix["pix"]]
    assert await ids(api, "status=failed") == [mix["card_us"]]
    assert await ids(api, "status=expired") == [mix["oxxo"]]
    assert await ids(api, "status=refunded") == []
    assert await ids(api, "status=chargeback") == []
    await simulate(api, mix["pix"], "chargeback")
    assert await ids(api, "status=chargeback") == [mix["pix"]]
    # A chargeback keeps the transaction completed.
    assert await ids(api, "status=completed") == [mix["pix"]]
    refunded = (await api.pay())["transactionId"]
    await simulate(api, refunded, "paid")
    await simulate(api, refunded, "refunded")
    assert await ids(api, "status=refunded") == [refunded]
    body = await page(api, "status=pending&limit=1")
    assert body["pagination"] == {"total": 2, "limit": 1, "offset": 0, "pages": 2}
    assert [tx["status"] for tx in (await page(api))["data"]].count("pending") == 2


@pytest.mark.parametrize("status", ["PENDING", "paid", "unknown", "pending,completed"])
async def test_bad_status_is_invalid_request(api: Api, status: str) -> None:
    result, body, _ = await api.get(f"/payments?status={status}", KEYS.sandbox_sk)
    error = assert_error(result, body, 400, "invalid_request")
    assert error["param"] == "status"


async def test_payment_method_id_filter(api: Api, mix: dict[str, str]) -> None:
    assert await ids(api, "paymentMethodId=1001") == [mix["spei_b"], mix["spei_a"]]
    assert await ids(api, "paymentMethodId=1006") == [mix["pix"]]
    assert await ids(api, "paymentMethodId=9999") == []


async def test_country_filter_takes_iso2_and_iso3(api: Api, mix: dict[str, str]) -> None:
    cases = [
        ("MX", ["spei_b", "oxxo", "spei_a"]),
        ("MEX", ["spei_b", "oxxo", "spei_a"]),
        ("mx", ["spei_b", "oxxo", "spei_a"]),
        ("BR", ["pix"]),
        ("BRA", ["pix"]),
        ("US", ["card_us"]),
        ("USA", ["card_us"]),
        ("CO", []),
    ]
    for country, expected in cases:
        assert await ids(api, f"country={country}") == [mix[n] for n in expected], country


async def test_bad_country_filter_is_invalid_request(api: Api) -> None:
    status, body, _ = await api.get("/payments?country=XX", KEYS.sandbox_sk)
    assert_error(status, body, 400, "invalid_request")


async def test_merchant_order_id_filter(api: Api, mix: dict[str, str]) -> None:
    assert await ids(api, "merchantOrderId=ORD-A") == [mix["card_us"], mix["spei_a"]]
    assert await ids(api, "merchantOrderId=ORD-C") == [mix["spei_b"]]
    assert await ids(api, "merchantOrderId=ord-a") == []
    assert await ids(api, "merchantOrderId=ORD") == []


async def test_merchant_order_id_filter_matches_the_value_sent(api: Api) -> None:
    order = " Pedido #42 & ñandú "
    tx_id = (await api.pay(merchantOrderId=order))["transactionId"]
    await api.pay(merchantOrderId=order.strip())
    assert await ids(api, "merchantOrderId=" + quote(order)) == [tx_id]


async def test_method_slug_filter(api: Api, mix: dict[str, str]) -> None:
    assert await ids(api, "method=spei") == [mix["spei_b"], mix["spei_a"]]
    assert await ids(api, "method=card") == [mix["card_us"]]
    assert await ids(api, "method=oxxo") == [mix["oxxo"]]
    assert await ids(api, "method=boleto") == []


async def test_filters_combine(api: Api, mix: dict[str, str]) -> None:
    cases = [
        ("country=MX&method=spei", ["spei_b", "spei_a"]),
        ("country=MX&status=pending", ["spei_b", "spei_a"]),
        ("country=MEX&status=expired", ["oxxo"]),
        ("merchantOrderId=ORD-A&status=pending", ["spei_a"]),
        ("merchantOrderId=ORD-A&country=USA&status=failed", ["card_us"]),
        ("paymentMethodId=1001&merchantOrderId=ORD-C", ["spei_b"]),
        ("paymentMethodId=1001&method=pix", []),
        ("country=BR&status=pending", []),
        ("method=pix&country=BRA&status=completed&paymentMethodId=1006", ["pix"]),
        ("country=MX&status=pending&limit=1&offset=1", ["spei_a"]),
    ]
    for query, expected in cases:
        body = await page(api, query)
        assert [tx["id"] for tx in body["data"]] == [mix[n] for n in expected], query
        if "limit" not in query:
            assert body["pagination"]["total"] == len(expected), query


async def test_transactions_alias_filters_identically(api: Api, mix: dict[str, str]) -> None:
    for query in ("country=MX", "status=completed", "method=card&limit=1", "offset=1&limit=2"):
        assert await page(api, query) == await page(api, query, path="/transactions")


# -- GET /payments/{id} ----------------------------------------------------------------------


@pytest.mark.parametrize("path", LIST_PATHS)
@pytest.mark.real_wall_clock
async def test_get_has_every_field(api: Api, path: str) -> None:
    before = datetime.now(UTC) - timedelta(seconds=1)
    created = await api.pay(merchantOrderId="ORD-9", tag1="x", tag3="z")
    status, tx, _ = await api.get(f"{path}/{created['transactionId']}", KEYS.sandbox_sk)
    assert status == 200, tx
    assert set(tx) >= GET_FIELDS, GET_FIELDS - set(tx)
    assert "transactionId" not in tx and tx["id"] == created["transactionId"]
    assert re.fullmatch(r"TXN-[A-Za-z0-9]+", tx["id"])
    for field in (
        "status",
        "amount",
        "currency",
        "amountLocal",
        "currencyLocal",
        "paymentMethodId",
        "paymentMethod",
        "country",
        "fees",
        "paymentFormUrl",
        "merchantOrderId",
        "tag1",
        "tag2",
        "tag3",
    ):
        assert tx[field] == created[field], field
    # Re-fetching the instructions gives the same ones as create.
    assert tx["paymentData"] == created["paymentData"]
    assert is_valid_clabe(tx["paymentData"]["clabe"])
    settlement = tx["settlement"]
    assert settlement["type"] == "delayed" and settlement["status"] == "pending"
    assert settlement["delay"] == created["settlement"]["delay"]
    created_at = datetime.fromisoformat(tx["timestamps"]["created"])
    assert created_at.tzinfo is not None
    assert before <= created_at <= datetime.now(UTC) + timedelta(seconds=1)
    assert tx["timestamps"]["created"].endswith("Z")


async def test_get_hosted_rail_keeps_its_form_url(api: Api) -> None:
    created = await api.pay(paymentMethodId="1025")
    status, tx, _ = await api.get(f"/payments/{created['transactionId']}", KEYS.sandbox_sk)
    assert status == 200
    assert tx["paymentFormUrl"] == created["paymentFormUrl"]
    assert tx["paymentData"] == {"method": "card"}


async def test_get_reflects_status_changes(api: Api) -> None:
    tx_id = (await api.pay())["transactionId"]
    await simulate(api, tx_id, "paid")
    status, tx, _ = await api.get(f"/payments/{tx_id}", KEYS.sandbox_sk)
    assert status == 200 and tx["status"] == "completed"
    assert datetime.fromisoformat(tx["timestamps"]["created"])


async def test_internal_fields_are_not_exposed(api: Api) -> None:
    created = await api.pay(documentId="XAXX010101000", userIp="10.0.0.1")
    status, _, response = await api.get(f"/payments/{created['transactionId']}", KEYS.sandbox_sk)
    text = await response.text()
    assert status == 200
    for leak in ("providerId", "prv_", "XAXX010101000", "10.0.0.1", "merchantId", "shopId"):
        assert leak not in text, leak


@pytest.mark.parametrize("path", LIST_PATHS)
async def test_unknown_and_foreign_ids_are_not_found(api: Api, keys: Keys, path: str) -> None:
    sandbox_tx = (await api.pay())["transactionId"]
    live_tx = (await api.pay(keys.live_sk))["transactionId"]
    other_tx = (await api.pay(keys.other_sk))["transactionId"]
    cases = [
        ("TXN-DOESNOTEXIST0000", keys.sandbox_sk),
        ("nope", keys.sandbox_sk),
        (other_tx, keys.sandbox_sk),  # another merchant's
        (sandbox_tx, keys.other_sk),
        (live_tx, keys.sandbox_sk),  # the other environment's
        (sandbox_tx, keys.live_sk),
        (sandbox_tx, keys.other_live_sk),
    ]
    for tx_id, key in cases:
        status, body, _ = await api.get(f"{path}/{tx_id}", key)
        assert_error(status, body, 404, "transaction_not_found")
    # ... and each is visible to its owner.
    for tx_id, key in ((sandbox_tx, keys.sandbox_sk), (live_tx, keys.live_sk)):
        status, _, _ = await api.get(f"{path}/{tx_id}", key)
        assert status == 200
    status, _, _ = await api.get(f"{path}/{other_tx}", keys.other_sk)
    assert status == 200


async def test_lists_are_partitioned_by_merchant_and_environment(api: Api, keys: Keys) -> None:
    mine = (await api.pay())["transactionId"]
    live = (await api.pay(keys.live_sk))["transactionId"]
    other = (await api.pay(keys.other_sk))["transactionId"]
    assert await ids(api) == [mine]
    assert await ids(api, key=keys.live_sk) == [live]
    assert await ids(api, key=keys.other_sk) == [other]
    assert await ids(api, key=keys.other_live_sk) == []
    assert await ids(api, key=keys.restricted_sk) == []


async def test_merchant_wide_key_sees_its_shops_transactions(api: Api, keys: Keys) -> None:
    mine = (await api.pay())["transactionId"]
    await api.pay(keys.other_sk)
    assert await ids(api, key=keys.legacy_sk) == [mine]
    status, tx, _ = await api.get(f"/payments/{mine}", keys.legacy_sk)
    assert status == 200 and tx["id"] == mine


@pytest.mark.parametrize("limit", ["1_0", "+5", " 5", "5.0", "1e2"])
async def test_limit_must_be_plain_digits(api: Api, keys: Keys, limit: str) -> None:
    status, body, _ = await api.get(f"/payments?limit={limit}", keys.sandbox_sk)
    assert_error(status, body, 400, "invalid_request")
