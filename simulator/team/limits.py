"""Bounds on namespaces: how many a server holds, how many are made per minute (issue 31)."""

from __future__ import annotations

import math
from collections import deque

from simulator.domain.errors import ApiError

WINDOW_SECONDS = 60.0


class CreationBounds:
    """The server's namespace bounds, checked before each creation (wall-clock seconds)."""

    def __init__(self, max_namespaces: int, per_minute: int) -> None:
        self.max_namespaces = max_namespaces
        self.per_minute = per_minute
        self._made: deque[float] = deque()  # creation times within the last minute

    def check(self, now: float, count: int) -> None:
        """Raise if one more namespace may not be made now, given `count` existing."""
        if count >= self.max_namespaces:
            raise ApiError(
                "namespace_limit_reached",
                f"This server holds {count} namespaces, its limit "
                f"(payorch serve --max-namespaces {self.max_namespaces}); delete one first.",
                details={"limit": self.max_namespaces, "current": count},
            )
        made = self._made
        while made and made[0] <= now - WINDOW_SECONDS:
            made.popleft()
        if len(made) >= self.per_minute:
            wait = max(1, math.ceil(made[0] + WINDOW_SECONDS - now))
            raise ApiError(
                "namespace_rate_limited",
                f"{len(made)} namespaces were created in the last minute, the limit "
                f"(payorch serve --namespace-creations-per-minute {self.per_minute}).",
                details={"limit": self.per_minute, "current": len(made)},
                headers={"Retry-After": str(wait)},
            )

    def made(self, now: float) -> None:
        self._made.append(now)


def check_owner_quota(owner: str, count: int, quota: int) -> None:
    if count >= quota:
        raise ApiError(
            "owner_quota_exceeded",
            f"Owner {owner!r} holds {count} namespaces, its quota of {quota}; delete one first.",
            details={"owner": owner, "limit": quota, "current": count},
        )
