"""Webhook subscriptions: every management endpoint, URL rules, scoping and 404 codes."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.webhook_receiver import deliveries, drain, paid_payment, subscribe
from tests.conftest import Api, Keys, assert_error

URL = "http://127.0.0.1:9/hooks"


async def test_create_returns_secret_once(api: Api, keys: Keys) -> None:
    status, sub, _ = await api.post(
        "/webhooks",
        keys.sandbox_sk,
        json={"url": URL, "events": ["payment.completed"], "description": "orders"},
    )
    assert status == 201, sub
    assert sub["id"].startswith("wh_") and sub["secret"].startswith("whsec_")
    assert sub["url"] == URL and sub["events"] == ["payment.completed"]
    assert sub["active"] is True and sub["managed"] is False and sub["description"] == "orders"
    assert sub["createdAt"].endswith("Z") and sub["updatedAt"] == sub["createdAt"]
    status, again, _ = await api.get(f"/webhooks/{sub['id']}", keys.sandbox_sk)
    assert status == 200 and "secret" not in again
    assert {k: v for k, v in sub.items() if k != "secret"} == again


async def test_managed_inbox_when_url_omitted(api: Api, keys: Keys) -> None:
    sub = await subscribe(api, None)
    assert sub["managed"] is True
    assert sub["url"].endswith(f"/api/v1/webhooks/{sub['id']}/deliveries")


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:3000/hooks",
        "http://127.45.6.7/x",
        "http://localhost:3000/hooks",
        "http://LOCALHOST/hooks",
        "http://[::1]:3000/hooks",
        "https://example.com/hooks",
        "https://10.0.0.8/hooks",
    ],
)
async def test_sandbox_accepts(api: Api, keys: Keys, url: str) -> None:
    await subscribe(api, url)


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/hooks",
        "http://10.0.0.8/hooks",
        "http://localhost.example.com/hooks",
        "ftp://127.0.0.1/hooks",
        "127.0.0.1:3000/hooks",
        "https://",
        "http://127.0.0.1:99999/x",
        "",
        42,
    ],
)
async def test_sandbox_refuses(api: Api, keys: Keys, url: Any) -> None:
    status, body, _ = await api.post("/webhooks", keys.sandbox_sk, json={"url": url, "events": "*"})
    error = assert_error(status, body, 400, "invalid_request")
    assert error["param"] == "url"


async def test_production_needs_https_even_on_loopback(api: Api, keys: Keys) -> None:
    status, body, _ = await api.post("/webhooks", keys.live_sk, json={"url": URL, "events": "*"})
    assert_error(status, body, 400, "invalid_request")
    sub = await subscribe(api, "https://hooks.example.com/x", key=keys.live_sk)
    managed = await subscribe(api, None, key=keys.live_sk)
    assert not sub["managed"] and managed["managed"]


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        ("*", ["*"]),
        (["*"], ["*"]),
        (["payment.failed", "payment.failed", "claim.opened"], ["payment.failed", "claim.opened"]),
    ],
)
async def test_events_accepted(api: Api, events: Any, expected: list[str]) -> None:
    assert (await subscribe(api, URL, events))["events"] == expected


@pytest.mark.parametrize(
    "events",
    [[], ["payment.complete"], ["*", "payment.failed"], "payment.failed", [1], {"a": 1}],
)
async def test_events_refused(api: Api, keys: Keys, events: Any) -> None:
    status, body, _ = await api.post(
        "/webhooks", keys.sandbox_sk, json={"url": URL, "events": events}
    )
    error = assert_error(status, body, 400, "invalid_request")
    assert error["param"] == "events" and "payment.completed" in error["details"]["validEvents"]


async def test_create_requires_events_and_refuses_unknown_fields(api: Api, keys: Keys) -> None:
    status, body, _ = await api.post("/webhooks", keys.sandbox_sk, json={"url": URL})
    assert assert_error(status, body, 400, "missing_field")["param"] == "events"
    status, body, _ = await api.post(
        "/webhooks", keys.sandbox_sk, json={"url": URL, "events": "*", "enabled_events": ["*"]}
    )
    assert assert_error(status, body, 400, "invalid_request")["param"] == "enabled_events"
    status, body, _ = await api.post(
        "/webhooks", keys.sandbox_sk, json={"events": "*", "description": "x" * 241}
    )
    assert assert_error(status, body, 400, "invalid_request")["param"] == "description"


async def test_list_is_an_offset_envelope_newest_first(api: Api, keys: Keys) -> None:
    ids = [(await subscribe(api, URL))["id"] for _ in range(3)]
    status, page, _ = await api.get("/webhooks?limit=2", keys.sandbox_sk)
    assert status == 200
    assert page["pagination"] == {"total": 3, "limit": 2, "offset": 0, "pages": 2}
    assert [s["id"] for s in page["data"]] == ids[::-1][:2]
    assert all("secret" not in s for s in page["data"])
    status, page, _ = await api.get("/webhooks?limit=0&offset=2", keys.sandbox_sk)
    assert page["pagination"] == {"total": 3, "limit": 1, "offset": 2, "pages": 3}
    assert [s["id"] for s in page["data"]] == [ids[0]]
    status, page, _ = await api.get("/webhooks?limit=1000", keys.sandbox_sk)
    assert page["pagination"]["limit"] == 100


async def test_patch_each_field(api: Api, keys: Keys) -> None:
    sub = await subscribe(api, URL)
    path = f"/webhooks/{sub['id']}"
    patch = {
        "url": "http://localhost:4000/new",
        "events": ["claim.opened"],
        "active": False,
        "description": "d" * 240,
    }
    status, body, _ = await api.call("PATCH", path, keys.sandbox_sk, json=patch)
    assert status == 200, body
    assert {k: body[k] for k in patch} == patch and "secret" not in body
    status, body, _ = await api.call("PATCH", path, keys.sandbox_sk, json={"description": None})
    assert body["description"] is None and body["active"] is False
    status, body, _ = await api.call("PATCH", path, keys.sandbox_sk, json={"active": True})
    assert body["active"] is True
    status, body, _ = await api.call("PATCH", path, keys.sandbox_sk, json={"url": None})
    assert body["managed"] is True and body["url"].endswith("/deliveries")
    for bad in (
        {"url": "http://example.com"},
        {"events": []},
        {"active": "no"},
        {"description": 5},
        {"description": "x" * 241},
        {"secret": "whsec_mine"},
    ):
        status, body, _ = await api.call("PATCH", path, keys.sandbox_sk, json=bad)
        assert_error(status, body, 400, "invalid_request")


async def test_delete_then_404(api: Api, keys: Keys) -> None:
    sub = await subscribe(api, URL)
    status, body, _ = await api.call("DELETE", f"/webhooks/{sub['id']}", keys.sandbox_sk)
    assert status == 200 and body == {"id": sub["id"], "deleted": True}
    status, body, _ = await api.get(f"/webhooks/{sub['id']}", keys.sandbox_sk)
    assert_error(status, body, 404, "webhook_not_found")
    status, page, _ = await api.get("/webhooks", keys.sandbox_sk)
    assert page["pagination"]["total"] == 0


async def test_rotate_returns_new_secret_and_grace_end(api: Api, keys: Keys) -> None:
    sub = await subscribe(api, URL)
    clock = await api.advance(0.001)
    status, body, _ = await api.post(f"/webhooks/{sub['id']}/rotate-secret", keys.sandbox_sk)
    assert status == 200, body
    assert body["secret"].startswith("whsec_") and body["secret"] != sub["secret"]
    assert body["previousSecretExpiresAt"] > clock["now"]
    await api.advance(86_400)
    status, body, _ = await api.get(f"/webhooks/{sub['id']}", keys.sandbox_sk)
    assert "previousSecretExpiresAt" not in body


@pytest.mark.parametrize(
    ("method", "suffix"),
    [
        ("GET", ""),
        ("PATCH", ""),
        ("DELETE", ""),
        ("POST", "/rotate-secret"),
        ("GET", "/deliveries"),
        ("POST", "/deliveries/dlv_000/replay"),
    ],
)
async def test_unknown_and_foreign_ids_are_404(
    api: Api, keys: Keys, method: str, suffix: str
) -> None:
    mine = await subscribe(api, URL)
    foreign = await subscribe(api, URL, key=keys.other_sk)
    live = await subscribe(api, "https://example.com/x", key=keys.live_sk)
    for webhook_id in ("wh_nope", foreign["id"], live["id"]):
        status, body, _ = await api.call(
            method, f"/webhooks/{webhook_id}{suffix}", keys.sandbox_sk, json={}
        )
        assert_error(status, body, 404, "webhook_not_found")
    if suffix.startswith("/deliveries/"):
        status, body, _ = await api.post(f"/webhooks/{mine['id']}{suffix}", keys.sandbox_sk)
        assert_error(status, body, 404, "webhook_delivery_not_found")


async def test_delivery_of_another_subscription_is_404(api: Api, keys: Keys, client: Any) -> None:
    first, second = await subscribe(api, None), await subscribe(api, None)
    await paid_payment(api)
    await drain(client)
    delivery = (await deliveries(api, first["id"]))[0]
    status, body, _ = await api.post(
        f"/webhooks/{second['id']}/deliveries/{delivery['id']}/replay", keys.sandbox_sk
    )
    assert_error(status, body, 404, "webhook_delivery_not_found")


async def test_scope_is_merchant_and_environment_not_shop(api: Api, keys: Keys) -> None:
    sub = await subscribe(api, URL)
    status, body, _ = await api.get(f"/webhooks/{sub['id']}", keys.legacy_sk)
    assert status == 200 and body["id"] == sub["id"]


async def test_credentials(api: Api, keys: Keys) -> None:
    status, body, _ = await api.get("/webhooks", keys.sandbox_pk)
    assert_error(status, body, 403, "key_kind_not_allowed")
    status, body, _ = await api.get("/webhooks")
    assert_error(status, body, 401, "missing_credentials")
