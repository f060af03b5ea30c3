"""Rate limits per credential, sized by tier (design.md 2.4), with Retry-After.

The limiter's real-time clock is replaced by a hand-moved one, so the counts are exact on any load.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from simulator.app import create_app
from simulator.domain.ratelimit import TIER_QUOTAS, RateLimiter
from simulator.http.keys import RATE_LIMITER
from simulator.settings import Settings
from tests.conftest import KEYS, Api, assert_error

TIER_KEYS = {
    "starter": KEYS.starter_sk,
    "standard": KEYS.sandbox_sk,
    "premium": KEYS.other_sk,
}


class HandClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def hand_clock() -> HandClock:
    return HandClock()


@pytest.fixture
async def limited(aiohttp_client: Any, tmp_path: Path, hand_clock: HandClock) -> Api:
    app = create_app(Settings(data_dir=tmp_path / "data", tick_seconds=0, rate_limit=True))
    app[RATE_LIMITER] = RateLimiter(clock=hand_clock)
    return Api(await aiohttp_client(app))


async def exhaust(api: Api, key: str, count: int) -> None:
    for _ in range(count):
        status, body, _ = await api.get("/ping", key)
        assert status == 200, body


@pytest.mark.parametrize("tier", ["starter", "standard", "premium"])
async def test_each_tier_gets_429_after_its_burst(
    limited: Api, hand_clock: HandClock, tier: str
) -> None:
    quota, key = TIER_QUOTAS[tier], TIER_KEYS[tier]
    await exhaust(limited, key, quota.burst)
    status, body, response = await limited.get("/ping", key)
    error = assert_error(status, body, 429, "rate_limited")
    assert error["details"]["tier"] == tier
    assert response.headers["Retry-After"] == "1"
    hand_clock.now += 1.0  # one second refills `per_second` tokens
    await exhaust(limited, key, int(quota.per_second))
    status, _, _ = await limited.get("/ping", key)
    assert status == 429


async def test_buckets_are_per_credential(limited: Api) -> None:
    await exhaust(limited, KEYS.starter_sk, TIER_QUOTAS["starter"].burst)
    status, _, _ = await limited.get("/ping", KEYS.starter_sk)
    assert status == 429
    status, _, _ = await limited.get("/ping", KEYS.sandbox_sk)
    assert status == 200


async def test_no_rate_limit_setting_turns_it_off(aiohttp_client: Any, tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", tick_seconds=0, rate_limit=False)
    api = Api(await aiohttp_client(create_app(settings)))
    await exhaust(api, KEYS.starter_sk, TIER_QUOTAS["starter"].burst + 50)
