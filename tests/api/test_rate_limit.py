"""Rate limits per credential, sized by tier (design.md 2.4), with Retry-After."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from simulator.app import create_app
from simulator.domain.ratelimit import TIER_QUOTAS
from simulator.settings import Settings
from tests.conftest import KEYS, Api, assert_error

TIER_KEYS = {
    "starter": KEYS.starter_sk,
    "standard": KEYS.sandbox_sk,
    "premium": KEYS.other_sk,
}


@pytest.fixture
async def limited(aiohttp_client: Any, tmp_path: Path) -> Api:
    settings = Settings(data_dir=tmp_path / "data", tick_seconds=0, rate_limit=True)
    return Api(await aiohttp_client(create_app(settings)))


@pytest.mark.parametrize("tier", ["starter", "standard", "premium"])
async def test_each_tier_gets_429_after_its_burst(limited: Api, tier: str) -> None:
    quota = TIER_QUOTAS[tier]
    key = TIER_KEYS[tier]
    limited_at = None
    # The bucket also refills while the loop runs, so allow for a second of refill.
    for count in range(quota.burst + int(quota.per_second) * 2):
        status, body, response = await limited.get("/ping", key)
        if status == 429:
            limited_at = count
            error = assert_error(status, body, 429, "rate_limited")
            assert error["details"]["tier"] == tier
            assert int(response.headers["Retry-After"]) >= 1
            break
        assert status == 200
    assert limited_at is not None and limited_at >= quota.burst


async def test_buckets_are_per_credential(limited: Api) -> None:
    for _ in range(TIER_QUOTAS["starter"].burst + 400):
        status, _, _ = await limited.get("/ping", KEYS.starter_sk)
        if status == 429:
            break
    assert status == 429
    status, _, _ = await limited.get("/ping", KEYS.sandbox_sk)
    assert status == 200


async def test_no_rate_limit_setting_turns_it_off(aiohttp_client: Any, tmp_path: Path) -> None:
    settings = replace(Settings(), data_dir=tmp_path / "data", tick_seconds=0, rate_limit=False)
    api = Api(await aiohttp_client(create_app(settings)))
    for _ in range(TIER_QUOTAS["starter"].burst + 300):
        status, _, _ = await api.get("/ping", KEYS.starter_sk)
        assert status == 200
