"""Token buckets per credential, sized by the merchant's tier (design.md 2.4).

Rate limits measure real request rates, so buckets refill on a monotonic real-time clock, not the
simulated one: advancing the simulator's clock must not refill anyone's bucket.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from time import monotonic

from simulator.domain.errors import ApiError


@dataclass(frozen=True, slots=True)
class Quota:
    per_second: float
    burst: int


# Generous enough that an ordinary test suite never meets them; a tight loop of a few thousand
# requests on the starter tier does. Documented in the README.
TIER_QUOTAS: dict[str, Quota] = {
    "starter": Quota(per_second=200, burst=1_000),
    "standard": Quota(per_second=500, burst=2_500),
    "premium": Quota(per_second=1_000, burst=5_000),
}


class RateLimiter:
    def __init__(
        self, quotas: dict[str, Quota] | None = None, *, clock: Callable[[], float] = monotonic
    ) -> None:
        self._quotas = quotas or TIER_QUOTAS
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, last refill)

    def take(self, credential: str, tier: str) -> None:
        """Spend one token or raise 429 `rate_limited` with Retry-After in whole seconds."""
        now = self._clock()
        quota = self._quotas[tier]
        tokens, last = self._buckets.get(credential, (float(quota.burst), now))
        tokens = min(float(quota.burst), tokens + (now - last) * quota.per_second)
        if tokens < 1:
            wait = math.ceil((1 - tokens) / quota.per_second)
            self._buckets[credential] = (tokens, now)
            raise ApiError(
                "rate_limited",
                f"The {tier} tier allows {quota.per_second:g} requests/s (bursts of "
                f"{quota.burst}); retry after {wait} s.",
                details={"tier": tier, "perSecond": quota.per_second, "burst": quota.burst},
                headers={"Retry-After": str(max(wait, 1))},
            )
        self._buckets[credential] = (tokens - 1, now)
