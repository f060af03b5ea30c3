"""Nobody reads another merchant's requests (issue 23, item 1), as a hostile client tried it.

Merchant A (mer_mercadoazul) reads the request log, its detail, its live tail and coverage while
merchant B (mer_fiestaboletos) gets tokens, and B's buyers open B's checkout session and B's
production provider page without any credential. A must see none of it; B sees its own requests
with every token, key and personal datum masked; a request nobody owns is shown to nobody.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlsplit

from aiohttp import ClientResponse

from tests.conftest import Api, Keys

B_PK = "pk_test_gpdhgg264j4jr1ib59jqlz86"  # mer_fiestaboletos' sandbox pair (fixtures)
BUYER = {
    "firstName": "Bruna",
    "lastName": "Queiroz",
    "email": "bruna.queiroz@example.org",
    "phone": "+5511912345678",
}
CARD_FORM = "1025"  # a hosted card form


async def v1(
    api: Api, method: str, path: str, key: str | None = None, **kw: Any
) -> tuple[int, Any, ClientResponse]:
    """A call under /api/v1 (Api.call leaves /checkout/... paths unprefixed: the pages')."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    response = await api.client.request(method, "/api/v1" + path, headers=headers, **kw)
    return response.status, await response.json(content_type=None), response


async def log_of(api: Api, key: str, query: str = "") -> list[dict[str, Any]]:
    status, body, _ = await api.get(f"/_sim/requests?limit=100{query}", key)
    assert status == 200, body
    return list(body["data"])


async def open_tail(api: Api, key: str) -> ClientResponse:
    response = await api.client.get(
        "/_sim/requests/stream", headers={"Authorization": f"Bearer {key}"}
    )
    assert response.status == 200
    assert await response.content.readline() == b"retry: 3000\n"
    return response


async def tail_until(response: ClientResponse, request_id: str) -> list[dict[str, Any]]:
    """Every summary the tail sends up to and including `request_id`'s."""

    async def read() -> list[dict[str, Any]]:
        seen: list[dict[str, Any]] = []
        while True:
            line = await response.content.readline()
            assert line, "the stream ended"
            if line.startswith(b"data: "):
                seen.append(json.loads(line[len(b"data: ") :]))
                if seen[-1]["id"] == request_id:
                    return seen

    return await asyncio.wait_for(read(), 5)


async def b_and_its_buyers_act(api: Api, keys: Keys) -> tuple[list[str], list[str]]:
    """B's token call and its buyers' credential-less calls; their request ids and the secrets
    they carried (tokens, keys, personal data)."""
    ids: list[str] = []
    status, pair, response = await api.post(
        "/auth/token", json={"apiKey": B_PK, "secretKey": keys.other_sk}
    )
    assert status == 200, pair
    ids.append(response.headers["X-Request-Id"])
    status, session, _ = await v1(
        api, "POST", "/checkout/sessions", keys.other_sk, json={"amount": 50, "customer": BUYER}
    )
    assert status == 200, session
    token = session["sessionId"]
    for method, kw in (("GET", {}), ("POST", {"json": {"paymentMethodId": "nope"}})):
        path = f"/checkout/sessions/{token}" + ("/select" if method == "POST" else "")
        status, _, response = await v1(api, method, path, **kw)
        ids.append(response.headers["X-Request-Id"])
    status, tx, _ = await api.post(
        "/payments",
        keys.other_live_sk,
        json={"amount": 50, "paymentMethodId": CARD_FORM, "userName": "Bruna Queiroz"},
    )
    assert status == 200, tx
    form = urlsplit(tx["paymentFormUrl"]).path
    provider_token = form.rsplit(".", 1)[1]
    response = await api.client.get(form, allow_redirects=False)
    assert response.status == 200
    ids.append(response.headers["X-Request-Id"])
    status, _, response = await api.post(
        "/auth/refresh", json={"refreshToken": pair["refreshToken"]}
    )
    assert status == 200
    ids.append(response.headers["X-Request-Id"])
    secrets = [
        B_PK,
        keys.other_sk,
        pair["refreshToken"],
        pair["accessToken"],
        token,
        provider_token,
        *BUYER.values(),
        "Bruna Queiroz",
    ]
    return ids, secrets


async def test_merchant_a_sees_none_of_bs_requests_nor_its_buyers(api: Api, keys: Keys) -> None:
    a_tail = await open_tail(api, keys.sandbox_sk)
    b_tail = await open_tail(api, keys.other_sk)
    ids, secrets = await b_and_its_buyers_act(api, keys)
    _, _, marker = await api.get("/me", keys.sandbox_sk)
    marker_id = marker.headers["X-Request-Id"]

    # A: its own marker only, in the list, the tail, and no detail of B's.
    seen_by_a = await log_of(api, keys.sandbox_sk, "&includeTools=true")
    assert [r["id"] for r in seen_by_a] == [marker_id]
    assert [r["id"] for r in await tail_until(a_tail, marker_id)] == [marker_id]
    for request_id in ids:
        status, body, _ = await api.get(f"/_sim/requests/{request_id}", keys.sandbox_sk)
        assert status == 404, body
        assert body["error"]["code"] == "request_not_found"

    # B: every one of them, owned by B, with nothing secret or personal in what it is served.
    seen_by_b = await log_of(api, keys.other_sk)
    assert set(ids) <= {r["id"] for r in seen_by_b}
    owners = {r["id"]: (r["merchantId"], r["environment"]) for r in seen_by_b}
    assert {owners[i][0] for i in ids} == {"mer_fiestaboletos"}
    assert owners[ids[3]] == ("mer_fiestaboletos", "production")  # the provider page
    details = [(await api.get(f"/_sim/requests/{r['id']}", keys.other_sk))[1] for r in seen_by_b]
    streamed = await tail_until(b_tail, ids[-1])
    served = json.dumps([seen_by_b, details, streamed])
    for secret in secrets:
        assert secret not in served, secret
    for response in (a_tail, b_tail):
        response.close()


async def test_coverage_counts_each_merchant_apart(api: Api, keys: Keys) -> None:
    await b_and_its_buyers_act(api, keys)
    await api.get("/me")  # nobody's 401

    async def reached(key: str) -> tuple[dict[str, int], dict[str, int]]:
        status, report, _ = await api.get("/_sim/coverage", key)
        assert status == 200, report
        rows = {r["key"]: r["reached"] for t in report["stateTables"] for r in t["rows"]}
        errors = {e["code"]: e["reached"] for e in report["errors"]}
        return rows, errors

    a_rows, a_errors = await reached(keys.sandbox_sk)
    assert not any(a_rows.values()) and not any(a_errors.values())
    b_rows, b_errors = await reached(keys.other_sk)
    assert b_rows["checkout.create"] == 1 and b_rows["transaction.create"] == 1
    assert b_errors["missing_credentials"] == 0  # the anonymous 401 is nobody's
    assert sum(b_errors.values()) >= 1  # the buyer's bad select is B's


async def test_a_request_without_a_known_owner_is_shown_to_nobody(api: Api, keys: Keys) -> None:
    await api.post("/auth/token", json={"apiKey": "pk_test_nope", "secretKey": "sk_test_nope"})
    await v1(api, "GET", "/checkout/sessions/cs_unknownunknownunknown")
    await api.get("/me", "sk_test_unknown")
    for key in (keys.sandbox_sk, keys.other_sk, keys.restricted_sk):
        assert await log_of(api, key, "&includeTools=true") == []


async def test_a_request_made_with_a_credential_is_its_makers(api: Api, keys: Keys) -> None:
    """A reading B's session with its own key made that request: A's, not B's (it already holds
    the answer); B's buyer reading it without a credential: B's."""
    status, session, _ = await v1(
        api, "POST", "/checkout/sessions", keys.other_sk, json={"amount": 50, "customer": BUYER}
    )
    assert status == 200
    path = f"/checkout/sessions/{session['sessionId']}"
    _, _, by_a = await v1(api, "GET", path, keys.sandbox_sk)
    _, _, by_buyer = await v1(api, "GET", path)
    mine = {r["id"] for r in await log_of(api, keys.sandbox_sk)}
    theirs = {r["id"] for r in await log_of(api, keys.other_sk)}
    assert by_a.headers["X-Request-Id"] in mine - theirs
    assert by_buyer.headers["X-Request-Id"] in theirs - mine
