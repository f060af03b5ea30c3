"""`/_sim/providers/reset` is not a provider: a method it does not take is refused naming only
the methods it does take (schemathesis's ST205 caught `Allow` listing the {id} route's too)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Api, Keys


async def call(api: Api, method: str, url: str, key: str, body: Any = None) -> tuple[int, Any, Any]:
    # Straight to the URL: Api.call would put /api/v1 before the alias's own /api/v1.
    headers = {"Authorization": f"Bearer {key}"}
    response = await api.client.request(method, url, json=body, headers=headers)
    return response.status, await response.json(content_type=None), response


@pytest.mark.parametrize("prefix", ["", "/api/v1"])
@pytest.mark.parametrize("method", ["GET", "PATCH", "OPTIONS"])
async def test_reset_allows_only_post(api: Api, keys: Keys, prefix: str, method: str) -> None:
    status, body, response = await call(
        api, method, f"{prefix}/_sim/providers/reset", keys.sandbox_sk
    )
    assert status == 405 and body["error"]["code"] == "method_not_allowed", body
    assert body["error"]["details"]["allowed"] == ["POST"]
    assert response.headers["Allow"] == "POST"


@pytest.mark.parametrize("prefix", ["", "/api/v1"])
async def test_a_provider_is_still_read_and_scripted(api: Api, keys: Keys, prefix: str) -> None:
    url = f"{prefix}/_sim/providers/prv_stp_mx"
    status, body, _ = await call(api, "PATCH", url, keys.sandbox_sk, {"seed": 3})
    assert status == 200 and body["seed"] == 3, body
    status, body, _ = await call(api, "GET", url, keys.sandbox_sk)
    assert status == 200 and body["id"] == "prv_stp_mx", body
