"""Namespaces (design.md 1.6): management, keys, routing by prefix and credential, and that
nothing crosses from one namespace to another, with two namespaces working at once."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from simulator.app import create_app
from simulator.settings import Settings
from tests.api.test_checkout import CUSTOMER
from tests.conftest import KEYS, Api, assert_error

DEFAULT_SK = KEYS.sandbox_sk
SHOP = "shp_mazul_tienda"


class Space:
    """One namespace as a client sees it: its name and the keys PUT answered."""

    def __init__(self, name: str, body: dict[str, Any]) -> None:
        self.name = name
        self.body = body
        pair = next(
            k for k in body["keys"] if k["shopId"] == SHOP and k["environment"] == "sandbox"
        )
        live = next(
            k for k in body["keys"] if k["shopId"] == SHOP and k["environment"] == "production"
        )
        self.sk, self.pk, self.live_sk = (
            pair["secretKey"],
            pair["publishableKey"],
            live["secretKey"],
        )


async def create(api: Api, name: str, key: str = DEFAULT_SK, **body: Any) -> Space:
    status, data, _ = await api.call("PUT", f"/_sim/namespaces/{name}", key, json=body or None)
    assert status == 201, data
    return Space(name, data)


async def raw(
    api: Api, method: str, path: str, key: str | None = None, json: Any = None
) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    response = await api.client.request(
        method, path, json=json, headers=headers, allow_redirects=False
    )
    text = await response.text()
    return response.status, (await response.json(content_type=None) if text else None)


# -- management -------------------------------------------------------------------------------


async def test_create_answers_keys_derived_from_the_name_and_again_unchanged(api: Api) -> None:
    first = await create(api, "ci-1")
    assert first.body["name"] == "ci-1" and first.body["createdAt"]
    assert len(first.body["keys"]) == len(await default_keys(api))
    for row in first.body["keys"]:
        assert row["secretKey"].startswith(("sk_test_ns_ci-1_", "sk_live_ns_ci-1_"))
        assert row["publishableKey"] is None or row["publishableKey"].startswith(
            ("pk_test_ns_ci-1_", "pk_live_ns_ci-1_")
        )
    status, again, _ = await api.call("PUT", "/_sim/namespaces/ci-1", DEFAULT_SK)
    assert status == 200 and again == first.body
    other = await create(api, "ci-2")
    mine = {k["secretKey"] for k in first.body["keys"]}
    assert mine.isdisjoint({k["secretKey"] for k in other.body["keys"]})


async def default_keys(api: Api) -> list[dict[str, Any]]:
    status, body, _ = await api.get("/_sim/namespaces/default", DEFAULT_SK)
    assert status == 200, body
    return body["keys"]


async def test_default_keeps_the_fixture_keys(api: Api) -> None:
    assert DEFAULT_SK in {k["secretKey"] for k in await default_keys(api)}


@pytest.mark.parametrize("name", ["Upper", "-dash", "a_b", "a" * 41, "a.b", "ns%2F.."])
async def test_a_bad_name_is_400_naming_the_rule(api: Api, name: str) -> None:
    status, body, _ = await api.call("PUT", f"/_sim/namespaces/{name}", DEFAULT_SK)
    error = assert_error(status, body, 400, "invalid_request")
    assert "[a-z0-9][a-z0-9-]{0,39}" in error["message"] and error["param"] == "name"


async def test_default_is_never_deleted_and_an_unknown_name_is_404(api: Api) -> None:
    status, body, _ = await api.call("DELETE", "/_sim/namespaces/default", DEFAULT_SK)
    assert_error(status, body, 403, "forbidden")
    for method in ("GET", "DELETE"):
        status, body, _ = await api.call(method, "/_sim/namespaces/nobody", DEFAULT_SK)
        assert_error(status, body, 404, "namespace_not_found")
    status, body = await raw(api, "GET", "/ns/nobody/api/v1/ping", DEFAULT_SK)
    assert_error(status, body, 404, "namespace_not_found")


async def test_who_may_do_what(api: Api) -> None:
    a, b = await create(api, "team-a"), await create(api, "team-b")
    # Any sandbox secret key creates (a namespace's too); production keys do not.
    assert (await api.call("PUT", "/_sim/namespaces/by-a", a.sk))[0] == 201
    status, body, _ = await api.call("PUT", "/_sim/namespaces/x", a.live_sk)
    assert_error(status, body, 400, "production_key_refused")
    # A namespace sees only itself; default sees all.
    _, listed, _ = await api.get("/_sim/namespaces", a.sk)
    assert [n["name"] for n in listed["data"]] == ["team-a"]
    _, listed, _ = await api.get("/_sim/namespaces", DEFAULT_SK)
    assert [n["name"] for n in listed["data"]] == ["default", "by-a", "team-a", "team-b"]
    for method in ("GET", "DELETE"):
        status, body, _ = await api.call(method, "/_sim/namespaces/team-b", a.sk)
        assert_error(status, body, 403, "forbidden")
    # A PUT of an existing name answers as GET would: never another namespace's keys.
    for name in ("team-b", "default", "by-a"):
        status, body, _ = await api.call("PUT", f"/_sim/namespaces/{name}", a.sk)
        assert_error(status, body, 403, "forbidden")
        assert "keys" not in body and b.sk not in str(body) and DEFAULT_SK not in str(body)
    status, body, _ = await api.call("PUT", "/_sim/namespaces/team-b", b.sk)
    assert status == 200 and body["keys"] == b.body["keys"]
    status, body, _ = await api.call("PUT", "/_sim/namespaces/team-b", DEFAULT_SK)
    assert status == 200 and body["keys"] == b.body["keys"]
    assert (await api.get("/ping", b.sk))[0] == 200  # b untouched by a's attempts
    assert (await api.get("/_sim/namespaces/team-a", a.sk))[0] == 200
    # A namespace deletes itself; default deletes any.
    assert (await api.call("DELETE", "/_sim/namespaces/team-a", a.sk))[0] == 204
    assert (await api.call("DELETE", "/_sim/namespaces/team-b", DEFAULT_SK))[0] == 204
    status, body, _ = await api.get("/ping", b.sk)
    assert_error(status, body, 401, "invalid_api_key")


# -- routing ----------------------------------------------------------------------------------


async def test_routing_by_credential_prefix_and_tokens(api: Api) -> None:
    a = await create(api, "ci-a")
    assert (await api.get("/ping", a.sk))[0] == 200
    status, body = await raw(api, "GET", "/ns/ci-a/api/v1/ping", a.sk)
    assert status == 200, body
    assert (await raw(api, "GET", "/ns/ci-a/_sim/clock", a.sk))[0] == 200
    assert (await raw(api, "GET", "/ns/default/api/v1/ping", DEFAULT_SK))[0] == 200
    # Tokens issued from a namespace's keys carry it; refresh too, with no other change.
    status, pair, _ = await api.post("/auth/token", json={"apiKey": a.pk, "secretKey": a.sk})
    assert status == 200, pair
    assert pair["accessToken"].startswith("ns_ci-a_")
    assert pair["refreshToken"].startswith("rt_ns_ci-a_")
    assert (await api.get("/me", pair["accessToken"]))[0] == 200
    status, again, _ = await api.post("/auth/refresh", json={"refreshToken": pair["refreshToken"]})
    assert status == 200, again
    status, pair2 = await raw(
        api, "POST", "/ns/ci-a/api/v1/auth/token", json={"apiKey": a.pk, "secretKey": a.sk}
    )
    assert status == 200, pair2


async def test_a_credential_under_another_namespaces_prefix_is_401(api: Api) -> None:
    a, b = await create(api, "ci-a"), await create(api, "ci-b")
    _, pair, _ = await api.post("/auth/token", json={"apiKey": a.pk, "secretKey": a.sk})
    for path, key in (
        ("/ns/ci-b/api/v1/ping", a.sk),
        ("/ns/ci-b/api/v1/me", pair["accessToken"]),
        ("/ns/default/api/v1/ping", a.sk),
        ("/ns/ci-a/api/v1/ping", DEFAULT_SK),
        ("/ns/ci-a/api/v1/ping", b.sk),
    ):
        status, body = await raw(api, "GET", path, key)
        assert_error(status, body, 401, "invalid_api_key")
    status, body = await raw(
        api, "POST", "/ns/ci-b/api/v1/auth/refresh", json={"refreshToken": pair["refreshToken"]}
    )
    assert_error(status, body, 401, "invalid_api_key")
    _, default_pair, _ = await api.post(
        "/auth/token", json={"apiKey": KEYS.sandbox_pk, "secretKey": DEFAULT_SK}
    )
    status, body = await raw(api, "GET", "/ns/ci-a/api/v1/me", default_pair["accessToken"])
    assert_error(status, body, 401, "invalid_api_key")


async def test_urls_handed_out_carry_the_prefix(api: Api) -> None:
    a = await create(api, "shop-1")
    status, session = await raw(
        api,
        "POST",
        "/api/v1/checkout/sessions",
        a.sk,
        json={"amount": 50, "customer": CUSTOMER},
    )
    assert status == 200, session
    origin = str(api.client.make_url("")).rstrip("/")
    assert session["checkoutUrl"].startswith(f"{origin}/ns/shop-1/checkout/")
    token = session["checkoutUrl"].rsplit("/", 1)[1]
    page = await api.client.get(f"/ns/shop-1/checkout/{token}")
    html = await page.text()
    assert page.status == 200, html
    assert f'action="/ns/shop-1/checkout/{token}/select' in html
    assert f'action="/checkout/{token}' not in html
    payment = await api.pay(a.sk, paymentMethodId="1001")
    page = await api.client.get(f"/ns/shop-1/c/{payment['transactionId']}")
    assert page.status == 200
    assert f'data-status-url="/ns/shop-1/c/{payment["transactionId"]}/status' in await page.text()
    # The page of a namespace's payment is not found in default.
    assert (await api.client.get(f"/c/{payment['transactionId']}")).status == 404


# -- isolation: two namespaces at once ----------------------------------------------------------


async def test_payments_balances_and_request_logs_do_not_cross(api: Api) -> None:
    a, b = await create(api, "iso-a"), await create(api, "iso-b")
    paid_a, paid_b, paid_default = await asyncio.gather(
        api.pay(a.sk, amount=10), api.pay(b.sk, amount=20), api.pay(DEFAULT_SK, amount=30)
    )
    for space, own in ((a, paid_a), (b, paid_b)):
        _, listed, _ = await api.get("/payments", space.sk)
        assert [p["id"] for p in listed["data"]] == [own["transactionId"]]
        _, log, _ = await api.get("/_sim/requests", space.sk)
        assert {row["path"] for row in log["data"]} <= {"/api/v1/payments"}
    for other in (paid_b, paid_default):
        status, body, _ = await api.get(f"/payments/{other['transactionId']}", a.sk)
        assert status == 404, body
    assert (
        len({paid_a["transactionId"], paid_b["transactionId"], paid_default["transactionId"]}) == 3
    )
    for space, own in ((a, paid_a), (b, paid_b)):
        path = f"/payments/{own['transactionId']}/simulate"
        assert (await api.post(path, space.sk, json={"action": "paid"}))[0] == 200
    _, bal_a, _ = await api.get("/me/balance", a.sk)
    _, bal_b, _ = await api.get("/me/balance", b.sk)
    assert bal_a != bal_b
    _, listed, _ = await api.get("/payments", DEFAULT_SK)
    assert [p["id"] for p in listed["data"]] == [paid_default["transactionId"]]


async def test_clock_reset_and_saved_states_are_per_namespace(api: Api) -> None:
    a, b = await create(api, "clk-a"), await create(api, "clk-b")
    await api.advance(86_400, a.sk)
    _, clock_b, _ = await api.get("/_sim/clock", b.sk)
    _, clock_d, _ = await api.get("/_sim/clock", DEFAULT_SK)
    assert clock_b["offsetSeconds"] < 60 and clock_d["offsetSeconds"] < 60
    paid_b = await api.pay(b.sk)
    paid_d = await api.pay(DEFAULT_SK)
    status, body, _ = await api.post("/_sim/state", a.sk, json={"name": "s1"})
    assert status == 201, body
    _, states_b, _ = await api.get("/_sim/state", b.sk)
    assert states_b["data"] == []
    status, _, _ = await api.post("/_sim/reset", a.sk)
    assert status == 200
    assert (await api.get(f"/payments/{paid_b['transactionId']}", b.sk))[0] == 200
    assert (await api.get(f"/payments/{paid_d['transactionId']}", DEFAULT_SK))[0] == 200
    status, body, _ = await api.post("/_sim/state/s1/restore", a.sk)
    assert status == 200, body
    _, clock_b, _ = await api.get("/_sim/clock", b.sk)
    assert clock_b["offsetSeconds"] < 60
    assert (await api.get(f"/payments/{paid_b['transactionId']}", b.sk))[0] == 200


async def test_provider_scripting_events_traces_and_coverage_stay_home(api: Api) -> None:
    a, b = await create(api, "prv-a"), await create(api, "prv-b")
    status, body, _ = await api.call(
        "PATCH", "/_sim/providers/prv_stp_mx", a.sk, json={"behaviour": "outage"}
    )
    assert status == 200, body
    _, seen_b, _ = await api.get("/_sim/providers/prv_stp_mx", b.sk)
    _, seen_d, _ = await api.get("/_sim/providers/prv_stp_mx", DEFAULT_SK)
    assert seen_b["behaviour"] != "outage" and seen_d["behaviour"] != "outage"
    live_b = await api.pay(b.live_sk)
    status, trace, _ = await api.get(f"/_sim/payments/{live_b['transactionId']}/trace", b.live_sk)
    assert status == 200 and trace["entries"], trace
    status, _, _ = await api.get(f"/_sim/payments/{live_b['transactionId']}/trace", a.live_sk)
    assert status == 404
    _, hook_a, _ = await api.post("/webhooks", a.sk, json={"events": "*"})
    await api.pay(b.sk)
    _, deliveries, _ = await api.get(f"/webhooks/{hook_a['id']}/deliveries", a.sk)
    assert deliveries["data"] == []

    def reached(body: dict[str, Any]) -> dict[str, int]:
        return {row["key"]: row["reached"] for t in body["stateTables"] for row in t["rows"]}

    def errors(body: dict[str, Any]) -> int:
        return sum(e["reached"] for e in body["errors"] if e["code"] == "transaction_not_found")

    _, before_a, _ = await api.get("/_sim/coverage", a.sk)
    _, before_b, _ = await api.get("/_sim/coverage", b.sk)
    assert (await api.get("/payments/TXN-NOPE", b.sk))[0] == 404
    _, cov_a, _ = await api.get("/_sim/coverage", a.sk)
    _, cov_b, _ = await api.get("/_sim/coverage", b.sk)
    assert errors(cov_a) == errors(before_a) and errors(cov_b) == errors(before_b) + 1
    assert not any(reached(cov_a).values())  # a made no payment; b's are b's
    assert reached(cov_b)["transaction.create"] >= 2


async def test_the_live_request_stream_is_per_namespace(api: Api) -> None:
    a, b = await create(api, "tail-a"), await create(api, "tail-b")
    response = await api.client.get(
        "/_sim/requests/stream", headers={"Authorization": f"Bearer {a.sk}"}
    )
    assert response.status == 200
    await api.pay(b.sk)
    await api.pay(a.sk)
    seen = b""
    while b"/api/v1/payments" not in seen:
        seen += await asyncio.wait_for(response.content.readany(), 5)
    assert b.sk[-4:].encode() not in seen
    response.close()


async def test_the_event_stream_is_per_namespace(api: Api) -> None:
    a, b = await create(api, "ev-a"), await create(api, "ev-b")
    response = await api.client.get("/_sim/events", headers={"Authorization": f"Bearer {a.sk}"})
    assert response.status == 200
    for space in (b, a):
        tx = await api.pay(space.sk)
        path = f"/payments/{tx['transactionId']}/simulate"
        assert (await api.post(path, space.sk, json={"action": "paid"}))[0] == 200
    mine = tx["transactionId"]
    seen = b""
    while mine.encode() not in seen:
        seen += await asyncio.wait_for(response.content.readany(), 5)
    ids = {line for line in seen.split(b"\n") if line.startswith(b"data:")}
    assert ids and all(mine.encode() in line for line in ids), seen
    response.close()


# -- persistence, unloading and restarts ---------------------------------------------------------


async def test_keys_and_data_survive_unloading_and_a_restart(
    aiohttp_client: Any, tmp_path: Path
) -> None:
    settings = Settings(
        data_dir=tmp_path / "data", tick_seconds=0, seed=7, rate_limit=False, namespaces_in_memory=1
    )
    client: TestClient = await aiohttp_client(create_app(settings))
    api = Api(client)
    a, b = await create(api, "keep-a"), await create(api, "keep-b")
    paid_a = await api.pay(a.sk)
    paid_b = await api.pay(b.sk)  # loads b: a leaves memory (one namespace in memory)
    _, listed, _ = await api.get("/_sim/namespaces", DEFAULT_SK)
    assert {n["name"]: n["loaded"] for n in listed["data"]} == {
        "default": True,
        "keep-a": False,
        "keep-b": True,
    }
    assert (await api.get(f"/payments/{paid_a['transactionId']}", a.sk))[0] == 200
    await client.close()
    client = await aiohttp_client(create_app(settings))
    api = Api(client)
    status, again, _ = await api.call("PUT", "/_sim/namespaces/keep-a", DEFAULT_SK)
    assert status == 200 and again["keys"] == a.body["keys"]
    assert (await api.get(f"/payments/{paid_a['transactionId']}", a.sk))[0] == 200
    assert (await api.get(f"/payments/{paid_b['transactionId']}", b.sk))[0] == 200
    assert (await api.get(f"/payments/{paid_b['transactionId']}", a.sk))[0] == 404
    assert sorted(p.name for p in (tmp_path / "data" / "namespaces").iterdir()) == [
        ".secret",
        "keep-a",
        "keep-b",
    ]
    assert (await api.call("DELETE", "/_sim/namespaces/keep-a", DEFAULT_SK))[0] == 204
    assert not (tmp_path / "data" / "namespaces" / "keep-a").exists()


async def test_an_idle_namespace_is_deleted_after_its_lifetime(api: Api) -> None:
    from freezegun import freeze_time

    with freeze_time(real_asyncio=True) as frozen:
        a = await create(api, "short", idleSeconds=60)
        kept = await create(api, "kept")
        frozen.tick(30)
        assert (await api.get("/ping", a.sk))[0] == 200  # used: the lifetime starts again
        frozen.tick(59)
        _, listed, _ = await api.get("/_sim/namespaces", DEFAULT_SK)
        assert [n["name"] for n in listed["data"]] == ["default", "kept", "short"]
        frozen.tick(2)
        _, listed, _ = await api.get("/_sim/namespaces", DEFAULT_SK)
        assert [n["name"] for n in listed["data"]] == ["default", "kept"]
        status, body, _ = await api.get("/ping", a.sk)
        assert_error(status, body, 401, "invalid_api_key")
        assert (await api.get("/ping", kept.sk))[0] == 200


async def test_an_unused_world_leaves_memory_and_comes_back(
    aiohttp_client: Any, tmp_path: Path
) -> None:
    from freezegun import freeze_time

    settings = Settings(
        data_dir=tmp_path / "data", tick_seconds=0, rate_limit=False, namespace_unload_seconds=60
    )
    client: TestClient = await aiohttp_client(create_app(settings))
    api = Api(client)
    with freeze_time(real_asyncio=True) as frozen:
        a = await create(api, "nap")
        paid = await api.pay(a.sk)
        await api.advance(3600, a.sk)

        async def loaded() -> bool:
            _, body, _ = await api.get("/_sim/namespaces/nap", DEFAULT_SK)
            return bool(body["loaded"])

        assert await loaded()
        frozen.tick(61)
        await api.get("/_sim/namespaces", DEFAULT_SK)  # runs the sweep, as the timer does
        assert not await loaded()
        status, body, _ = await api.get(f"/payments/{paid['transactionId']}", a.sk)
        assert status == 200, body
        _, clock, _ = await api.get("/_sim/clock", a.sk)
        assert clock["offsetSeconds"] > 3500  # its clock was kept on disk
        assert await loaded()


async def test_webhooks_are_signed_with_the_namespaces_secret_and_name_it(
    api: Api, aiohttp_server: Any
) -> None:
    import payorch.webhooks
    from tests.api.webhook_receiver import paid_payment, start_receiver, subscribe

    receiver = await start_receiver(aiohttp_server)
    a = await create(api, "hooks")
    sub = await subscribe(api, receiver.url, key=a.sk)
    default_sub = await subscribe(api, receiver.url)
    tx = await paid_payment(api, a.sk)
    received = await receiver.wait_for(2)
    for item in received:
        event = payorch.webhooks.verify(item.body, item.signature, sub["secret"])
        assert event["data"]["id"] == tx["transactionId"]
        assert item.headers["X-Service-Namespace"] == "hooks"
    assert default_sub["secret"] != sub["secret"]
    await paid_payment(api)  # default's: no namespace header, default's secret
    received = await receiver.wait_for(4)
    for item in received[2:]:
        assert "X-Service-Namespace" not in item.headers
        payorch.webhooks.verify(item.body, item.signature, default_sub["secret"])


async def test_a_pages_redirect_stays_in_its_namespace(api: Api) -> None:
    a = await create(api, "pages")
    status, session = await raw(
        api, "POST", "/api/v1/checkout/sessions", a.sk, json={"amount": 50, "customer": CUSTOMER}
    )
    assert status == 200, session
    token = session["checkoutUrl"].rsplit("/", 1)[1]
    response = await api.client.post(
        f"/ns/pages/checkout/{token}/select",
        data={"paymentMethodId": "1001"},
        allow_redirects=False,
    )
    assert response.status == 303, await response.text()
    assert response.headers["Location"].startswith("/ns/pages/c/")


async def test_without_a_data_dir_namespaces_live_in_memory(aiohttp_client: Any) -> None:
    settings = Settings(data_dir=None, tick_seconds=0, seed=3, rate_limit=False)
    api = Api(await aiohttp_client(create_app(settings)))
    a = await create(api, "mem")
    paid = await api.pay(a.sk)
    assert (await api.get(f"/payments/{paid['transactionId']}", a.sk))[0] == 200
    assert (await api.get(f"/payments/{paid['transactionId']}", DEFAULT_SK))[0] == 404
    assert (await api.call("DELETE", "/_sim/namespaces/mem", DEFAULT_SK))[0] == 204
    status, body, _ = await api.get("/ping", a.sk)
    assert_error(status, body, 401, "invalid_api_key")
