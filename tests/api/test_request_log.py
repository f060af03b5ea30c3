"""The request log through the public surface: GET /_sim/requests (filters, pages, who sees what),
GET /_sim/requests/{requestId} (bodies, masked and cut), the live tail, and its bounds."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aiohttp import ClientResponse

from simulator.app import create_app
from simulator.domain.requestlog import MAX_BODY
from simulator.http.keys import BUS, REQUEST_LOG, REQUEST_TAIL
from simulator.settings import Settings
from tests.conftest import Api, Keys, assert_error

VISA = "4111 1111 1111 1111"  # passes the Luhn check
_JSON = {"Content-Type": "application/json"}


async def requests(api: Api, key: str, query: str = "") -> dict[str, Any]:
    status, body, _ = await api.get(f"/_sim/requests{query}", key)
    assert status == 200, body
    return body


async def detail(api: Api, key: str, request_id: str) -> dict[str, Any]:
    status, body, _ = await api.get(f"/_sim/requests/{request_id}", key)
    assert status == 200, body
    return body


async def test_a_request_is_logged_with_its_bodies(api: Api, keys: Keys) -> None:
    status, tx, response = await api.post(
        "/payments", keys.sandbox_sk, json={"amount": 50, "paymentMethodId": "1001"}
    )
    assert status == 200
    request_id = response.headers["X-Request-Id"]
    page = await requests(api, keys.sandbox_sk)
    assert page["pagination"] == {"total": 1, "limit": 50, "offset": 0, "pages": 1}
    [summary] = page["data"]
    assert summary["id"] == request_id
    assert summary["method"] == "POST" and summary["path"] == "/api/v1/payments"
    assert summary["status"] == 200 and summary["errorCode"] is None
    assert summary["merchantId"] == "mer_mercadoazul" and summary["environment"] == "sandbox"
    assert summary["idempotentReplayed"] is False and summary["durationMs"] >= 0
    assert summary["at"].endswith("Z") and summary["simulatedAt"].endswith("Z")
    assert "request" not in summary
    one = await detail(api, keys.sandbox_sk, request_id)
    assert {k: one[k] for k in summary} == summary
    assert one["request"]["body"]["body"] == {"amount": 50, "paymentMethodId": "1001"}
    assert one["response"]["body"]["body"]["transactionId"] == tx["transactionId"]
    assert one["request"]["headers"] == {}
    assert one["response"]["body"]["truncated"] is False


async def test_every_error_can_be_looked_up_by_its_request_id(api: Api, keys: Keys) -> None:
    key = {"Idempotency-Key": "k1"}
    await api.post(
        "/payments", keys.sandbox_sk, json={"amount": 5, "paymentMethodId": "1001"}, headers=key
    )
    calls: list[tuple[str, str, str | None, dict[str, Any]]] = [
        ("POST", "/payments", keys.sandbox_sk, {"json": {"amount": -1, "paymentMethodId": "1"}}),
        ("GET", "/payments/TXN-nope", keys.sandbox_sk, {}),
        ("GET", "/nothing-here", keys.sandbox_sk, {}),
        ("DELETE", "/payments", keys.sandbox_sk, {}),
        ("POST", "/payments", keys.sandbox_sk, {"data": "amount=5"}),
        ("POST", "/payments", keys.sandbox_sk, {"data": "{not json", "headers": _JSON}),
        ("GET", "/_sim/clock", keys.live_sk, {}),
        ("POST", "/_sim/clock/advance", keys.sandbox_sk, {"json": {"seconds": -5}}),
        ("GET", "/_sim/withdrawals/WDR-nope", keys.sandbox_sk, {}),
        (
            "POST",
            "/payments",
            keys.sandbox_sk,
            {"json": {"amount": 6, "paymentMethodId": "1001"}, "headers": key},
        ),
    ]
    seen = []
    for method, path, key, kw in calls:
        status, body, _ = await api.call(method, path, key, **kw)
        assert status >= 400, (path, body)
        seen.append((status, body["error"]["code"], body["error"]["requestId"]))
    for status, code, request_id in seen:
        one = await detail(api, keys.sandbox_sk, request_id)
        assert (one["status"], one["errorCode"]) == (status, code)
        assert one["response"]["body"]["body"]["error"]["requestId"] == request_id
    # Without a known credential a request is nobody's: nobody can look it up.
    for key in (None, "sk_test_unknown"):
        status, body, _ = await api.get("/me", key)
        assert status == 401
        status, body, _ = await api.get(
            f"/_sim/requests/{body['error']['requestId']}", keys.sandbox_sk
        )
        assert assert_error(status, body, 404, "request_not_found")


async def test_filters_and_pages_newest_first(api: Api, keys: Keys) -> None:
    await api.pay()
    await api.get("/payments/TXN-missing", keys.sandbox_sk)
    await api.get("/payments", keys.sandbox_sk)
    await api.advance(60)
    await api.post("/payments", keys.sandbox_sk, json={"amount": 0, "paymentMethodId": "1001"})
    every = (await requests(api, keys.sandbox_sk))["data"]
    assert [(r["method"], r["status"]) for r in every] == [
        ("POST", 400),
        ("POST", 200),
        ("GET", 200),
        ("GET", 404),
        ("POST", 200),
    ]
    assert [r["status"] for r in (await requests(api, keys.sandbox_sk, "?status=4xx"))["data"]] == [
        400,
        404,
    ]
    assert len((await requests(api, keys.sandbox_sk, "?status=404"))["data"]) == 1
    assert len((await requests(api, keys.sandbox_sk, "?method=post"))["data"]) == 3
    by_path = await requests(api, keys.sandbox_sk, "?path=/payments")
    assert by_path == await requests(api, keys.sandbox_sk, "?path=/api/v1/payments")
    assert len(by_path["data"]) == 4
    assert [r["path"] for r in (await requests(api, keys.sandbox_sk, "?path=/_sim"))["data"]] == [
        "/_sim/clock/advance"
    ]
    assert (await requests(api, keys.sandbox_sk, "?merchant=mer_other"))["data"] == []
    page = await requests(api, keys.sandbox_sk, "?limit=2&offset=1&method=GET")
    assert page["pagination"] == {"total": 2, "limit": 2, "offset": 1, "pages": 1}
    assert [r["status"] for r in page["data"]] == [404]
    # Reads of the log itself are never logged.
    assert len((await requests(api, keys.sandbox_sk))["data"]) == 5


@pytest.mark.parametrize(
    "query, param",
    [
        ("status=4yy", "status"),
        ("status=600", "status"),
        ("status=abc", "status"),
        ("method=P0ST", "method"),
        ("path=payments", "path"),
        ("limit=ten", "limit"),
    ],
)
async def test_a_filter_that_does_not_parse_is_a_400_naming_it(
    api: Api, keys: Keys, query: str, param: str
) -> None:
    paths = ["/_sim/requests"] + (["/_sim/requests/stream"] if param != "limit" else [])
    for path in paths:
        status, body, _ = await api.get(f"{path}?{query}", keys.sandbox_sk)
        assert assert_error(status, body, 400, "invalid_request")["param"] == param


async def test_a_caller_sees_its_merchants_requests_in_both_environments(
    api: Api, keys: Keys
) -> None:
    await api.pay()
    live = await api.pay(keys.live_sk)
    theirs = await api.pay(keys.other_sk)
    await api.get("/me")  # no credential: nobody's, shown to nobody
    mine = (await requests(api, keys.sandbox_sk))["data"]
    assert [(r["merchantId"], r["environment"]) for r in mine] == [
        ("mer_mercadoazul", "production"),
        ("mer_mercadoazul", "sandbox"),
    ]
    live_id = mine[0]["id"]
    assert (await detail(api, keys.sandbox_sk, live_id))["response"]["body"]["body"][
        "transactionId"
    ] == live["transactionId"]
    other = (await requests(api, keys.other_sk))["data"]
    assert [r["merchantId"] for r in other] == ["mer_fiestaboletos"]
    status, body, _ = await api.get(f"/_sim/requests/{live_id}", keys.other_sk)
    assert assert_error(status, body, 404, "request_not_found")["param"] == "requestId"
    assert theirs["transactionId"] not in json.dumps(mine)


async def test_production_credentials_are_refused_and_logged(api: Api, keys: Keys) -> None:
    status, body, _ = await api.get("/_sim/requests", keys.live_sk)
    assert_error(status, body, 400, "production_key_refused")
    status, body, _ = await api.get("/_sim/requests/req_000000000000000000000000", keys.live_sk)
    assert_error(status, body, 400, "production_key_refused")
    assert (await requests(api, keys.sandbox_sk))["data"] == []  # reads of the log: not logged
    status, body, _ = await api.get("/_sim/clock", keys.live_sk)
    [entry] = (await requests(api, keys.sandbox_sk))["data"]
    assert (entry["errorCode"], entry["environment"]) == ("production_key_refused", "production")


async def test_secrets_card_numbers_and_document_ids_are_masked(api: Api, keys: Keys) -> None:
    status, pair, token_call = await api.post(
        "/auth/token", json={"apiKey": keys.sandbox_pk, "secretKey": keys.sandbox_sk}
    )
    assert status == 200
    one = await detail(api, keys.sandbox_sk, token_call.headers["X-Request-Id"])
    sent, answered = one["request"]["body"]["body"], one["response"]["body"]["body"]
    assert sent == {
        "apiKey": "****" + keys.sandbox_pk[-4:],
        "secretKey": "****" + keys.sandbox_sk[-4:],
    }
    assert answered["accessToken"] == "****" + pair["accessToken"][-4:]
    assert answered["refreshToken"] == "****" + pair["refreshToken"][-4:]
    assert keys.sandbox_sk not in json.dumps(one) and pair["accessToken"] not in json.dumps(one)

    body = {
        "amount": 100,
        "currency": "BRL",
        "paymentMethodId": "sbx_pix",
        "documentId": "52998224725",
        "tag1": f"card {VISA} by mistake",
    }
    status, tx, created = await api.post(
        "/payments", keys.sandbox_sk, json=body, headers={"Sandbox-Simulate": "paid"}
    )
    assert status == 200, tx
    one = await detail(api, keys.sandbox_sk, created.headers["X-Request-Id"])
    text = json.dumps(one)
    assert "52998224725" not in text and "4111 1111 1111 1111" not in text
    assert one["request"]["body"]["body"]["documentId"] == "****4725"
    assert one["request"]["body"]["body"]["tag1"] == "card ****1111 by mistake"
    assert one["request"]["headers"] == {"Sandbox-Simulate": "paid"}

    status, hook, created = await api.post(
        "/webhooks", keys.sandbox_sk, json={"url": "http://127.0.0.1:9/h", "events": "*"}
    )
    assert status == 201, hook
    one = await detail(api, keys.sandbox_sk, created.headers["X-Request-Id"])
    assert one["response"]["body"]["body"]["secret"] == "****" + hook["secret"][-4:]


async def test_text_bodies_are_masked_and_big_ones_cut(api: Api, keys: Keys) -> None:
    status, _, call = await api.post(
        "/payments",
        keys.sandbox_sk,
        data='{"apiKey": "x", "secretKey": "sk_test_abcdefgh1234"',
        headers=_JSON,
    )
    assert status == 400
    one = await detail(api, keys.sandbox_sk, call.headers["X-Request-Id"])
    assert one["request"]["body"]["text"] == '{"apiKey": "****", "secretKey": "****1234"'
    assert "body" not in one["request"]["body"]

    big = {"amount": 5, "paymentMethodId": "1001", "padding": "x" * (MAX_BODY + 10)}
    status, _, call = await api.post("/payments", keys.sandbox_sk, json=big)
    assert status == 400
    kept = (await detail(api, keys.sandbox_sk, call.headers["X-Request-Id"]))["request"]["body"]
    assert kept["truncated"] is True and kept["bytes"] > MAX_BODY
    assert len(kept["text"]) == MAX_BODY and kept["text"].startswith('{"amount": 5')


async def test_an_idempotent_replay_is_marked(api: Api, keys: Keys) -> None:
    headers = {"Idempotency-Key": "order-7"}
    body = {"amount": 5, "paymentMethodId": "1001"}
    for _ in range(2):
        status, _, _ = await api.post("/payments", keys.sandbox_sk, json=body, headers=headers)
        assert status == 200
    replay, first = (await requests(api, keys.sandbox_sk))["data"]
    assert (first["idempotentReplayed"], replay["idempotentReplayed"]) == (False, True)
    one = await detail(api, keys.sandbox_sk, replay["id"])
    assert one["request"]["headers"] == {"Idempotency-Key": "order-7"}


async def _client_with(aiohttp_client: Any, tmp_path: Any, size: int) -> Api:
    settings = Settings(
        data_dir=tmp_path / "d", tick_seconds=0, seed=1, rate_limit=False, request_log=size
    )
    return Api(await aiohttp_client(create_app(settings)))


async def test_the_log_keeps_the_last_n(aiohttp_client: Any, tmp_path: Any, keys: Keys) -> None:
    api = await _client_with(aiohttp_client, tmp_path, 3)
    ids = []
    for _ in range(5):
        _, _, response = await api.get("/ping", keys.sandbox_sk)
        ids.append(response.headers["X-Request-Id"])
    page = await requests(api, keys.sandbox_sk)
    assert [r["id"] for r in page["data"]] == ids[:1:-1]
    status, body, _ = await api.get(f"/_sim/requests/{ids[0]}", keys.sandbox_sk)
    assert_error(status, body, 404, "request_not_found")


async def test_a_log_of_size_0_is_off(aiohttp_client: Any, tmp_path: Any, keys: Keys) -> None:
    api = await _client_with(aiohttp_client, tmp_path, 0)
    _, _, response = await api.get("/ping", keys.sandbox_sk)
    assert (await requests(api, keys.sandbox_sk))["data"] == []
    status, body, _ = await api.get(
        f"/_sim/requests/{response.headers['X-Request-Id']}", keys.sandbox_sk
    )
    assert "--request-log 0" in assert_error(status, body, 404, "request_not_found")["message"]
    assert len(api.client.server.app[REQUEST_LOG]) == 0


# -- the live tail ------------------------------------------------------------------------------


async def open_tail(api: Api, key: str, query: str = "") -> ClientResponse:
    response = await api.client.get(
        f"/_sim/requests/stream{query}", headers={"Authorization": f"Bearer {key}"}
    )
    assert response.status == 200, await response.text()
    assert response.headers["Content-Type"].startswith("text/event-stream")
    assert await response.content.readline() == b"retry: 3000\n"
    return response


async def next_request(response: ClientResponse, timeout: float = 5.0) -> dict[str, Any]:
    async def read() -> dict[str, Any]:
        while True:
            line = await response.content.readline()
            assert line, "the stream ended"
            if line.startswith(b"data: "):
                return json.loads(line[len(b"data: ") :])

    return await asyncio.wait_for(read(), timeout)


async def test_the_tail_carries_each_request_its_filters_match(api: Api, keys: Keys) -> None:
    errors = await open_tail(api, keys.sandbox_sk, "?status=4xx")
    everything = await open_tail(api, keys.sandbox_sk)
    theirs = await open_tail(api, keys.other_sk)
    await api.pay()
    _, body, _ = await api.get("/payments/TXN-nope", keys.sandbox_sk)
    await api.pay(keys.other_sk)
    first = await next_request(errors)
    assert (first["status"], first["errorCode"], first["id"]) == (
        404,
        "transaction_not_found",
        body["error"]["requestId"],
    )
    assert [(await next_request(everything))["status"] for _ in range(2)] == [200, 404]
    assert (await next_request(theirs))["merchantId"] == "mer_fiestaboletos"
    assert api.client.server.app[REQUEST_TAIL].readers() == 3
    for response in (errors, everything, theirs):
        response.close()


async def test_shutdown_ends_open_tails(api: Api, keys: Keys) -> None:
    response = await open_tail(api, keys.sandbox_sk)
    api.client.server.app[REQUEST_TAIL].close_all()
    body = await asyncio.wait_for(response.content.read(), 5)
    assert body == b": connected\n\n"


async def test_each_request_names_the_events_it_caused(api: Api, keys: Keys) -> None:
    """`eventIds`: what `payorch record` puts after each request, whatever the timestamps say."""
    emitted: list[str] = []
    api.client.server.app[BUS].subscribe(lambda event: emitted.append(event["id"]))
    tx = (await api.pay(keys.sandbox_sk))["transactionId"]
    status, _, paid = await api.post(
        f"/payments/{tx}/simulate", keys.sandbox_sk, json={"action": "paid"}
    )
    assert status == 200
    caused_by_simulate = list(emitted)
    assert len(caused_by_simulate) == 2  # payment.completed, payment.captured
    await api.get(f"/payments/{tx}", keys.sandbox_sk)
    await api.post("/_sim/clock/advance", keys.sandbox_sk, json={"seconds": 3 * 86_400})
    caused_by_advance = emitted[2:]
    assert caused_by_advance  # the settlement the advance's jobs closed
    [advance, read, simulate, create] = (await requests(api, keys.sandbox_sk))["data"]
    assert simulate["id"] == paid.headers["X-Request-Id"]
    assert simulate["eventIds"] == caused_by_simulate
    assert (create["eventIds"], read["eventIds"]) == ([], [])
    assert advance["eventIds"] == caused_by_advance
    assert (await detail(api, keys.sandbox_sk, simulate["id"]))["eventIds"] == caused_by_simulate


async def test_a_clock_advance_names_only_its_own_merchants_events(api: Api, keys: Keys) -> None:
    """The clock is every merchant's: an advance runs their jobs, but its entry names only the
    events of the merchant whose key advanced it."""
    emitted: list[tuple[str, str]] = []
    api.client.server.app[BUS].subscribe(lambda e: emitted.append((e["id"], e["merchantId"])))
    for key in (keys.sandbox_sk, keys.other_sk):
        tx = (await api.pay(key))["transactionId"]
        status, body, _ = await api.post(f"/payments/{tx}/simulate", key, json={"action": "paid"})
        assert status == 200, body
    emitted.clear()
    await api.post("/_sim/clock/advance", keys.other_sk, json={"seconds": 3 * 86_400})
    merchants = {merchant for _, merchant in emitted}
    assert merchants == {"mer_mercadoazul", "mer_fiestaboletos"}  # both settled
    theirs = [event for event, merchant in emitted if merchant == "mer_fiestaboletos"]
    [advance] = (await requests(api, keys.other_sk))["data"][:1]
    assert advance["path"] == "/_sim/clock/advance" and advance["eventIds"] == theirs
