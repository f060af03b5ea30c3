"""Idempotency-Key on POST /payments, against api-spec.txt (Common request headers, Errors).

A retried POST under the same key never executes twice, even when the retries race; a reuse with a
different body is 409; errors are never cached; keys are per merchant and environment and live 24
hours of simulated time.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.conftest import Api, Keys, assert_error

KEYS = Keys()
BODY = {"amount": 50, "paymentMethodId": "1001", "merchantOrderId": "ORD-1", "tag1": "t"}
REPLAYED = "Idempotent-Replayed"


async def post(
    api: Api,
    body: dict[str, Any],
    idem_key: str | None,
    key: str = KEYS.sandbox_sk,
    path: str = "/payments",
) -> tuple[int, Any, bytes, bool]:
    """(status, json, raw bytes, replayed) of one create."""
    headers = {"Idempotency-Key": idem_key} if idem_key is not None else None
    status, data, response = await api.post(path, key, json=body, headers=headers)
    raw = await response.read()
    replayed = response.headers.get(REPLAYED)
    assert replayed in (None, "true"), replayed
    return status, data, raw, replayed == "true"


async def total(api: Api, key: str = KEYS.sandbox_sk) -> int:
    status, body, _ = await api.get("/payments", key)
    assert status == 200, body
    return body["pagination"]["total"]


async def test_same_key_and_body_replays_the_first_response(api: Api) -> None:
    status, first, first_raw, replayed = await post(api, BODY, "order-1")
    assert status == 200 and not replayed
    for _ in range(2):
        status, again, raw, replayed = await post(api, BODY, "order-1")
        assert status == 200 and replayed
        assert raw == first_raw
        assert again["transactionId"] == first["transactionId"]
    assert await total(api) == 1


async def test_replay_ignores_key_order_and_the_alias_path(api: Api) -> None:
    _, _, first_raw, _ = await post(api, BODY, "order-2")
    reordered = dict(reversed(list(BODY.items())))
    status, _, raw, replayed = await post(api, reordered, "order-2")
    assert status == 200 and replayed and raw == first_raw
    # POST /transactions is the same operation as POST /payments.
    status, _, raw, replayed = await post(api, BODY, "order-2", path="/transactions")
    assert status == 200 and replayed and raw == first_raw
    assert await total(api) == 1


async def test_replay_is_the_original_response_after_the_state_moved(api: Api) -> None:
    _, first, first_raw, _ = await post(api, BODY, "order-3")
    status, body, _ = await api.post(
        f"/payments/{first['transactionId']}/simulate", KEYS.sandbox_sk, json={"action": "paid"}
    )
    assert status == 200, body
    status, _, raw, replayed = await post(api, BODY, "order-3")
    assert status == 200 and replayed and raw == first_raw


@pytest.mark.parametrize(
    "changed",
    [
        {**BODY, "amount": 51},
        {**BODY, "tag1": "other"},
        {k: v for k, v in BODY.items() if k != "tag1"},
        {**BODY, "tag2": None},
        {**BODY, "amount": 50.5},
    ],
)
async def test_same_key_with_another_body_is_a_conflict(api: Api, changed: dict[str, Any]) -> None:
    _, _, first_raw, _ = await post(api, BODY, "order-4")
    status, error, _, replayed = await post(api, changed, "order-4")
    assert not replayed
    assert assert_error(status, error, 409, "idempotency_conflict")["param"] == "Idempotency-Key"
    assert await total(api) == 1
    # The original is still replayed afterwards.
    status, _, raw, replayed = await post(api, BODY, "order-4")
    assert status == 200 and replayed and raw == first_raw


async def test_without_a_key_every_post_executes(api: Api) -> None:
    first = await post(api, BODY, None)
    second = await post(api, BODY, None)
    assert first[1]["transactionId"] != second[1]["transactionId"]
    assert not first[3] and not second[3]
    assert await total(api) == 2


async def test_errors_are_not_cached(api: Api) -> None:
    pix = {"amount": 50, "paymentMethodId": "1006"}
    for _ in range(2):  # the same failing body executes again each time
        status, error, _, replayed = await post(api, pix, "order-5")
        assert_error(status, error, 422, "missing_required_fields")
        assert not replayed
    status, _, raw, replayed = await post(api, {**pix, "documentId": "52998224725"}, "order-5")
    assert status == 200 and not replayed
    status, _, again, replayed = await post(api, {**pix, "documentId": "52998224725"}, "order-5")
    assert status == 200 and replayed and again == raw
    assert await total(api) == 1


async def test_a_400_then_an_unrelated_body_executes(api: Api) -> None:
    status, error, _, _ = await post(api, {"paymentMethodId": "1001"}, "order-6")
    assert_error(status, error, 400, "missing_field")
    status, _, _, replayed = await post(api, BODY, "order-6")
    assert status == 200 and not replayed
    assert await total(api) == 1


async def test_server_side_failures_are_not_cached(api: Api, keys: Keys) -> None:
    no_instructions = {
        "amount": 50,
        "paymentMethodId": "1021",
        "documentId": "45678912",
        "userEmail": "ana@example.pe",
    }
    for _ in range(2):
        status, error, _, replayed = await post(api, no_instructions, "order-7", keys.live_sk)
        assert_error(status, error, 502, "payment_instructions_unavailable")
        assert not replayed
    status, _, _, replayed = await post(api, BODY, "order-7", keys.live_sk)
    assert status == 200 and not replayed
    assert await total(api, keys.live_sk) == 1


@pytest.mark.parametrize("other", [KEYS.other_sk, KEYS.live_sk, KEYS.other_live_sk])
async def test_keys_are_scoped_per_merchant_and_environment(api: Api, other: str) -> None:
    _, mine, _, _ = await post(api, BODY, "shared-key")
    status, theirs, _, replayed = await post(api, BODY, "shared-key", other)
    assert status == 200 and not replayed
    assert theirs["transactionId"] != mine["transactionId"]
    # A different body under the same key in another scope is no conflict either.
    status, _, _, replayed = await post(api, {**BODY, "amount": 77}, "scoped", other)
    assert status == 200 and not replayed
    status, _, _, replayed = await post(api, BODY, "scoped")
    assert status == 200 and not replayed
    assert await total(api) == 2 and await total(api, other) == 2


async def test_keys_are_scoped_per_shop(api: Api, keys: Keys) -> None:
    # Two production shops of one merchant: a replay must never hand a shop another shop's
    # transaction, which it could not read back.
    _, tienda, _, _ = await post(api, BODY, "shop-key", keys.live_sk)
    status, app_shop, _, replayed = await post(api, BODY, "shop-key", keys.promoted_live_sk)
    assert status == 200 and not replayed
    assert app_shop["transactionId"] != tienda["transactionId"]
    status, got, _ = await api.get(f"/payments/{app_shop['transactionId']}", keys.promoted_live_sk)
    assert status == 200 and got["id"] == app_shop["transactionId"]
    status, _, _, replayed = await post(api, BODY, "shop-key", keys.live_sk)
    assert status == 200 and replayed


async def test_concurrent_retries_create_exactly_one_transaction(api: Api) -> None:
    results = await asyncio.gather(*(post(api, BODY, "race") for _ in range(10)))
    assert [status for status, *_ in results] == [200] * 10
    assert len({data["transactionId"] for _, data, _, _ in results}) == 1
    assert len({raw for _, _, raw, _ in results}) == 1
    assert sum(not replayed for *_, replayed in results) == 1
    assert await total(api) == 1


async def test_concurrent_different_bodies_never_create_two(api: Api) -> None:
    bodies = [{**BODY, "amount": 10 + i} for i in range(10)]
    results = await asyncio.gather(*(post(api, body, "race-2") for body in bodies))
    winners = [
        (body, data)
        for body, (status, data, _, _) in zip(bodies, results, strict=True)
        if status == 200
    ]
    assert winners, results
    assert len({data["transactionId"] for _, data in winners}) == 1
    for (status, data, _, _), body in zip(results, bodies, strict=True):
        if status != 200:
            assert_error(status, data, 409, "idempotency_conflict")
        else:
            assert data["amount"] == body["amount"]
    assert await total(api) == 1


async def test_key_lives_24_simulated_hours(api: Api) -> None:
    _, first, first_raw, _ = await post(api, BODY, "daily")
    await api.advance(86_399)
    status, _, raw, replayed = await post(api, BODY, "daily")
    assert status == 200 and replayed and raw == first_raw
    status, error, _, _ = await post(api, {**BODY, "amount": 60}, "daily")
    assert_error(status, error, 409, "idempotency_conflict")
    await api.advance(2)
    status, fresh, _, replayed = await post(api, BODY, "daily")
    assert status == 200 and not replayed
    assert fresh["transactionId"] != first["transactionId"]
    assert await total(api) == 2
    # The fresh execution starts a new 24-hour window.
    status, _, _, replayed = await post(api, BODY, "daily")
    assert status == 200 and replayed


async def test_expired_key_accepts_another_body(api: Api) -> None:
    await post(api, BODY, "daily-2")
    await api.advance(86_401)
    status, tx, _, replayed = await post(api, {**BODY, "amount": 60}, "daily-2")
    assert status == 200 and not replayed and tx["amount"] == 60


async def test_key_length_is_bounded(api: Api) -> None:
    status, error, _, _ = await post(api, BODY, "k" * 256)
    assert assert_error(status, error, 400, "invalid_request")["param"] == "Idempotency-Key"
    assert await total(api) == 0
    status, _, _, replayed = await post(api, BODY, "k" * 255)
    assert status == 200 and not replayed
    status, _, _, replayed = await post(api, BODY, "k" * 255)
    assert status == 200 and replayed
    assert await total(api) == 1


async def test_sandbox_simulate_header_is_part_of_the_request(api: Api, keys: Keys) -> None:
    headers = {"Idempotency-Key": "sim-header", "Sandbox-Simulate": "paid"}
    body = {"amount": 10, "paymentMethodId": "1001"}
    status, _, _ = await api.post("/payments", keys.sandbox_sk, json=body, headers=headers)
    assert status == 200
    headers["Sandbox-Simulate"] = "failed"
    status, error, _ = await api.post("/payments", keys.sandbox_sk, json=body, headers=headers)
    assert_error(status, error, 409, "idempotency_conflict")


@pytest.mark.parametrize("amount", ["50.0", "50.00", "5e1", "5.0E+1", "50"])
async def test_numbers_are_compared_by_value(api: Api, amount: str) -> None:
    """A retry whose body spells a number differently is the same request (issue 18)."""

    async def raw_post(text: str) -> tuple[int, Any, bytes, bool]:
        headers = {"Idempotency-Key": "by-value", "Content-Type": "application/json"}
        status, data, response = await api.post(
            "/payments", KEYS.sandbox_sk, data=text, headers=headers
        )
        return status, data, await response.read(), response.headers.get(REPLAYED) == "true"

    template = '{"amount": %s, "paymentMethodId": "1001", "merchantOrderId": "ORD-1"}'
    status, _, first_raw, replayed = await raw_post(template % "50")
    assert status == 200 and not replayed
    status, _, raw, replayed = await raw_post(template % amount)
    assert status == 200 and replayed and raw == first_raw
    status, error, _, _ = await raw_post(template % "50.01")
    assert_error(status, error, 409, "idempotency_conflict")
    assert await total(api) == 1


@pytest.mark.parametrize("key", ["clé-1", "ключ", "order\u00a01", "emoji-\U0001f600", "tab\tkey"])
async def test_keys_are_printable_ascii(api: Api, key: str) -> None:
    headers = {"Idempotency-Key": key}
    status, error, _ = await api.post("/payments", KEYS.sandbox_sk, json=BODY, headers=headers)
    assert assert_error(status, error, 400, "invalid_request")["param"] == "Idempotency-Key"
    assert await total(api) == 0


async def test_every_printable_ascii_character_is_a_key(api: Api) -> None:
    key = "".join(map(chr, range(0x21, 0x7F))) + " with spaces"
    status, _, _, replayed = await post(api, BODY, key)
    assert status == 200 and not replayed
    status, _, _, replayed = await post(api, BODY, key)
    assert status == 200 and replayed


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/payments", BODY),
        (
            "/me/payout/send",
            {
                "methodId": "po_mx_spei",
                "amount": 200,
                "recipient": {
                    "name": "Ana López",
                    "account": "012180001183597198",
                    "documentType": "RFC",
                    "documentId": "IXLZ9511197B1",
                },
            },
        ),
    ],
)
async def test_two_keys_are_refused_naming_the_header(
    api: Api, path: str, body: dict[str, Any]
) -> None:
    """Issue 31 item 9: the first of two Idempotency-Key headers was used silently."""
    funded, _, _ = await api.post(
        "/me/payout/fund-sandbox", KEYS.sandbox_sk, json={"currency": "MXN", "amount": 1000}
    )
    assert funded == 200
    headers = [
        ("Authorization", f"Bearer {KEYS.sandbox_sk}"),
        ("Idempotency-Key", "first"),
        ("Idempotency-Key", "second"),
    ]
    response = await api.client.post(f"/api/v1{path}", json=body, headers=headers)
    error = assert_error(response.status, await response.json(), 400, "invalid_request")
    assert error["param"] == "Idempotency-Key" and "one Idempotency-Key" in error["message"]
    # Nothing was executed: each key alone still creates (not a replay).
    status, _, _, replayed = await post(api, body, "first", path=path)
    assert (status, replayed) == (200, False)
