"""A seeded server is reproducible (issue 14 item 9): every identifier, token and generated value
in its answers comes from the seeded generator.

Two servers with the same seed, each on a fresh data dir, get the same requests and must answer
byte-identical bodies once what legitimately differs is masked: timestamps (real time passes
between the two runs), the servers' own origins, and the signature of access tokens (HMAC under the
data dir's signing secret, a secret key that stays from the OS's CSPRNG).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from aiohttp.test_utils import TestClient

from simulator.app import create_app
from simulator.settings import Settings
from tests.api.test_payouts import SPEI
from tests.conftest import KEYS

SEED = 20261124
ISO = re.compile(rb'"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"')
DAY = 86_400

Step = tuple[str, str, Any]


async def call(
    client: TestClient, method: str, path: str, body: Any = None, key: str = KEYS.sandbox_sk
) -> tuple[int, bytes]:
    headers = {"Authorization": f"Bearer {key}"}
    response = await client.request(method, path, json=body, headers=headers)
    return response.status, await response.read()


def masked(raw: bytes, origin: str) -> Any:
    """The body with timestamps (the clock's offset too: real time passes while the clock
    advances) and the origin masked, and access tokens shown by their claims (issued-at and expiry
    masked) without their signature."""
    raw = ISO.sub(b'"<time>"', raw.replace(origin.encode(), b"<origin>"))

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: MASKS.get(k, walk)(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return walk(orjson.loads(raw))


def claims(token: str) -> dict[str, Any]:
    header, payload, _signature = token.split(".")
    decoded = [
        orjson.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4))) for p in (header, payload)
    ]
    return {"header": decoded[0], "claims": {**decoded[1], "iat": "<time>", "exp": "<time>"}}


MASKS: dict[str, Callable[[Any], Any]] = {
    "accessToken": lambda token: claims(token),
    "offsetSeconds": lambda _: "<offset>",
}


async def journey(client: TestClient) -> list[tuple[str, int, Any]]:
    """The same requests on one server: (step, status, masked body) for each."""
    origin = str(client.make_url("")).rstrip("/")
    seen: list[tuple[str, int, Any]] = []
    last: dict[str, Any] = {}

    async def step(name: str, method: str, path: str, body: Any = None, **kw: Any) -> Any:
        status, raw = await call(client, method, path, body, **kw)
        assert status in (200, 201), (name, status, raw)
        seen.append((name, status, masked(raw, origin)))
        last[name] = orjson.loads(raw)
        return last[name]

    api = "/api/v1"
    hook = await step("webhook", "POST", f"{api}/webhooks", {"events": ["*"]})
    await step("rotate", "POST", f"{api}/webhooks/{hook['id']}/rotate-secret")
    tx = await step("payment", "POST", f"{api}/payments", {"amount": 50, "paymentMethodId": "1001"})
    await step("payment 2", "POST", f"{api}/payments", {"amount": 70, "paymentMethodId": "1001"})
    tx_id = tx["transactionId"]
    # A production card form (flow: hosted): its paymentFormUrl carries the page's own token.
    hosted = {"amount": 50, "paymentMethodId": "1025"}
    await step("production hosted payment", "POST", f"{api}/payments", hosted, key=KEYS.live_sk)
    await step("paid", "POST", f"{api}/payments/{tx_id}/simulate", {"action": "paid"})
    await step("advance", "POST", "/_sim/clock/advance", {"seconds": 3 * DAY})
    await step("refund", "POST", f"{api}/payments/{tx_id}/refund", {"amount": 10})
    await step("balance", "GET", f"{api}/me/balance")
    await step("deliveries", "GET", f"{api}/webhooks/{hook['id']}/deliveries")
    await step("fund", "POST", f"{api}/me/payout/fund-sandbox", {"currency": "MXN", "amount": 5000})
    payout = {"methodId": "po_mx_spei", "amount": 500, "recipient": SPEI}
    await step("payout", "POST", f"{api}/me/payout/send", payout)
    await step("transfer", "POST", f"{api}/me/payout/transfer", {"amount": 5})
    await step("swap", "POST", f"{api}/me/payout/swap", {"from": "USD", "to": "MXN", "amount": 1})
    pair = {"apiKey": KEYS.sandbox_pk, "secretKey": KEYS.sandbox_sk}
    tokens = await step("token", "POST", f"{api}/auth/token", pair)
    await step("refresh", "POST", f"{api}/auth/refresh", {"refreshToken": tokens["refreshToken"]})
    customer = {
        "firstName": "Ana",
        "lastName": "Souza",
        "email": "ana@example.com",
        "phone": "+5511987654321",
    }
    await step("checkout", "POST", f"{api}/checkout/sessions", {"amount": 50, "customer": customer})
    account_body = {
        "endUserRef": "user-1",
        "name": "Ana López",
        "email": "ana@example.com",
        "phone": "+52 55 1234 5678",
        "depositMethodId": "dm_spei_stp",
    }
    account = await step("deposit account", "POST", f"{api}/me/deposit-accounts", account_body)
    clabe = account["account"]["clabe"]
    await step("deposit", "POST", "/_sim/deposits", {"clabe": clabe, "amount": 1000})
    await step("withdrawal", "POST", "/_sim/withdrawals", {"amount": 5})
    await step("advance 2", "POST", "/_sim/clock/advance", {"seconds": 2 * DAY})
    await step("deliveries 2", "GET", f"{api}/webhooks/{hook['id']}/deliveries?limit=100")
    await step("payouts", "GET", f"{api}/me/payout/send")
    await step("payments", "GET", f"{api}/payments")
    return seen


async def test_two_servers_with_one_seed_answer_the_same(
    aiohttp_client: Callable[..., Any], tmp_path: Path
) -> None:
    runs = []
    for name in ("first", "second"):
        settings = Settings(data_dir=tmp_path / name, tick_seconds=0, seed=SEED, rate_limit=False)
        runs.append(await journey(await aiohttp_client(create_app(settings))))
    first, second = runs
    assert [s[0] for s in first] == [s[0] for s in second]
    differing = [one[0] for one, other in zip(first, second, strict=True) if one != other]
    assert not differing, ", ".join(differing)


async def test_a_seeded_server_restarted_on_its_data_dir_reuses_no_id(
    aiohttp_client: Callable[..., Any], tmp_path: Path
) -> None:
    """The seed mixes in only the numbers of events and transactions, so a restart with neither
    draws the same values again: none may replace a record stored under the same id."""
    settings = Settings(data_dir=tmp_path / "data", tick_seconds=0, seed=SEED, rate_limit=False)
    pair = {"apiKey": KEYS.sandbox_pk, "secretKey": KEYS.sandbox_sk}
    fund = {"currency": "MXN", "amount": 100}
    refresh_tokens = []
    for _run in range(2):
        client = await aiohttp_client(create_app(settings))
        assert (await call(client, "POST", "/api/v1/webhooks", {"events": ["*"]}))[0] == 201
        assert (await call(client, "POST", "/api/v1/me/payout/fund-sandbox", fund))[0] == 200
        status, raw = await call(client, "POST", "/api/v1/auth/token", pair)
        assert status == 200, raw
        refresh_tokens.append(orjson.loads(raw)["refreshToken"])
        await client.close()
    # Read back after one more restart, from the stored records alone.
    client = await aiohttp_client(create_app(settings))
    status, raw = await call(client, "GET", "/api/v1/webhooks")
    assert len({hook["id"] for hook in orjson.loads(raw)["data"]}) == 2
    status, raw = await call(client, "GET", "/api/v1/me/payout/balance")
    [mxn] = [b for b in orjson.loads(raw)["balances"] if b["currency"] == "MXN"]
    assert mxn["available"] == 200
    # Two refresh tokens, each valid once.
    for token in refresh_tokens:
        assert (await call(client, "POST", "/api/v1/auth/refresh", {"refreshToken": token}))[
            0
        ] == 200
    for token in refresh_tokens:
        assert (await call(client, "POST", "/api/v1/auth/refresh", {"refreshToken": token}))[
            0
        ] == 401


async def test_two_seeded_servers_answer_errors_with_the_same_request_ids(
    aiohttp_client: Callable[..., Any], tmp_path: Path
) -> None:
    """Issue 31 item 9: an error's envelope (and every X-Request-Id) held a request id from the
    OS, so a seeded server's refusals differed byte for byte."""
    requests: list[Step] = [
        ("POST", "/api/v1/payments", {"amount": 0, "paymentMethodId": "1001"}),
        ("GET", "/api/v1/payments/TXN-NOSUCH", None),
        ("POST", "/_sim/clock/advance", {"seconds": -1}),
        ("GET", "/api/v1/payments", None),
    ]
    runs = []
    for name in ("first", "second"):
        settings = Settings(data_dir=tmp_path / name, tick_seconds=0, seed=SEED, rate_limit=False)
        client = await aiohttp_client(create_app(settings))
        answers = []
        for method, path, body in requests:
            headers = {"Authorization": f"Bearer {KEYS.sandbox_sk}"}
            response = await client.request(method, path, json=body, headers=headers)
            answers.append((response.headers["X-Request-Id"], await response.read()))
        runs.append(answers)
    first, second = runs
    assert first == second
    assert len({request_id for request_id, _ in first}) == len(requests)
    assert all(b'"requestId":"req_' in body for _, body in first[:3])
