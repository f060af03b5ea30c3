"""Bounds on namespaces: how many a server holds, how many are made per minute (issue 31)."""

from __future__ import annotations

import contextlib
import math
import os
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path

from simulator.domain.errors import ApiError
from simulator.domain.ratelimit import TIER_QUOTAS, Quota, RateLimiter

WINDOW_SECONDS = 60.0
# The preset of --namespace-rps: the vendor's documentation shows no figures (api-spec.txt:
# "the numeric request quotas are not shown"), so it takes the lowest tier's bucket, the
# strictest one a sandbox key meets here.
SANDBOX_PRESET = "sandbox"


class CreationBounds:
    """The server's namespace bounds, checked before each creation (wall-clock seconds)."""

    def __init__(self, max_namespaces: int, per_minute: int, made: Iterable[float] = ()) -> None:
        self.max_namespaces = max_namespaces
        self.per_minute = per_minute
        self._made: deque[float] = deque(made)  # creation times within the last minute

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


class NamespaceRate:
    """Requests per second per namespace (`payorch serve --namespace-rps`): a token bucket per
    namespace on the monotonic clock, beside the per-credential one of each world."""

    def __init__(self, per_second: float, burst: int) -> None:
        self.quota = Quota(per_second, burst)
        self._limiter = RateLimiter({"namespace": self.quota})

    def take(self, name: str) -> ApiError | None:
        """None, or the 429 to answer (`rate_limited`, naming the namespace and its limit)."""
        try:
            self._limiter.take(name, "namespace")
        except ApiError as error:
            quota = self.quota
            return ApiError(
                "rate_limited",
                f"Namespace {name!r} allows {quota.per_second:g} requests/s (bursts of "
                f"{quota.burst}, payorch serve --namespace-rps); "
                f"retry after {error.headers['Retry-After']} s.",
                details={
                    "namespace": name,
                    "perSecond": quota.per_second,
                    "burst": quota.burst,
                    "current": quota.burst,
                },
                headers=error.headers,
            )
        return None


def namespace_rate(value: str) -> tuple[float, int] | None:
    """`--namespace-rps`: N (a burst of 5 s' worth), `sandbox` (the preset), or 0 (off).
    ValueError for anything else."""
    if value == SANDBOX_PRESET:
        starter = TIER_QUOTAS["starter"]
        return starter.per_second, starter.burst
    rate = float(value)
    if not rate >= 0 or rate == float("inf"):
        raise ValueError(f"{value!r} is not 0 or more")
    return (rate, max(1, int(rate * 5))) if rate else None


def disk_bytes(directory: Path | None) -> int:
    """Bytes of the files under `directory` (a namespace's store and saved states)."""
    if directory is None:
        return 0
    total = 0
    stack = [directory]
    while stack:
        with contextlib.suppress(FileNotFoundError), os.scandir(stack.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                else:
                    with contextlib.suppress(FileNotFoundError):
                        total += entry.stat(follow_symlinks=False).st_size
    return total


class StorageQuota:
    """Objects and bytes on disk per namespace (`--namespace-max-objects`, `--namespace-max-bytes`;
    0: no limit), checked before each write request: a namespace at or past either limit gets
    403 for writes until it deletes, resets or restores (those stay allowed)."""

    def __init__(self, max_objects: int, max_bytes: int) -> None:
        self.max_objects = max_objects
        self.max_bytes = max_bytes

    def check(
        self, name: str, objects: Callable[[], int], directory: Path | None
    ) -> ApiError | None:
        if self.max_objects:
            count = objects()
            if count >= self.max_objects:
                return self._refuse(name, "objects", self.max_objects, count)
        if self.max_bytes:
            size = disk_bytes(directory)
            if size >= self.max_bytes:
                return self._refuse(name, "bytes", self.max_bytes, size)
        return None

    @staticmethod
    def _refuse(name: str, what: str, limit: int, current: int) -> ApiError:
        return ApiError(
            "namespace_storage_quota_exceeded",
            f"Namespace {name!r} holds {current:,} {what}, its limit of {limit:,}; delete, "
            f"reset or restore to write again.",
            details={"namespace": name, "limit": limit, "current": current, "unit": what},
        )
