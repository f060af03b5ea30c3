"""A namespace's lifetime beyond its idle one: a maximum age, an absolute expiry, an extension.
Wall-clock seconds (a namespace is the server's, not a simulated thing)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from simulator.domain.errors import ApiError

# The longest lifetime a namespace is given (ten years): past it a time is not a lifetime.
MAX_SECONDS = 10 * 365 * 86_400


def _seconds(body: dict[str, Any], field: str) -> int | None:
    value = body.get(field)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_SECONDS:
        raise ApiError(
            "invalid_request",
            f"`{field}` is a whole number of seconds, from 1 to {MAX_SECONDS:,} (ten years).",
            param=field,
        )
    return value


def _instant(body: dict[str, Any], field: str, now: float) -> float | None:
    value = body.get(field)
    if value is None:
        return None
    try:
        if not isinstance(value, str):
            raise ValueError
        at = datetime.fromisoformat(value.replace("Z", "+00:00"))
        if at.tzinfo is None:
            raise ValueError
        seconds = at.timestamp()
    except (ValueError, OverflowError):
        raise ApiError(
            "invalid_request",
            f"`{field}` is an ISO 8601 time with its zone (2026-12-01T18:00:00Z).",
            param=field,
        ) from None
    if seconds <= now:
        raise ApiError("invalid_request", f"`{field}` is in the past.", param=field)
    if seconds > now + MAX_SECONDS:
        raise ApiError("invalid_request", f"`{field}` is more than ten years away.", param=field)
    return seconds


def expiry_of(body: dict[str, Any], now: float) -> float | None:
    """When a namespace made now with `body` (PUT) expires: the earlier of `maxAgeSeconds`
    from now and `expiresAt`; None: it does not."""
    age = _seconds(body, "maxAgeSeconds")
    at = _instant(body, "expiresAt", now)
    due = [t for t in (now + age if age else None, at) if t is not None]
    return min(due) if due else None


def extended(body: dict[str, Any], current: float | None, now: float) -> float:
    """The new expiry of `POST .../extend`: `{seconds}` more than the current one (or than
    now, if it had none), or `{expiresAt}`."""
    seconds = _seconds(body, "seconds")
    at = _instant(body, "expiresAt", now)
    if (seconds is None) == (at is None):
        raise ApiError("invalid_request", "Send one of `seconds` or `expiresAt`.", param="seconds")
    if at is not None:
        return at
    assert seconds is not None
    return min(max(current or now, now) + seconds, now + MAX_SECONDS)
