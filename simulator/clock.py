"""The one simulated clock: real time plus an offset that only grows (until a reset).

This module is the only place that reads the wall clock for simulated time. Domain code receives
`now` from it; `clock/advance` pins it while due jobs run so that each job sees its own due time.
"""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime


class SimClock:
    def __init__(self, offset_seconds: float = 0.0) -> None:
        self._offset = float(offset_seconds)
        self._pinned: float | None = None

    @property
    def offset_seconds(self) -> float:
        return self._offset

    def timestamp(self) -> float:
        """Simulated POSIX seconds."""
        if self._pinned is not None:
            return self._pinned
        return time.time() + self._offset

    def timestamp_at(self, real: float) -> float:
        """Simulated POSIX seconds when the wall clock read `real` (a moment ago): the request
        log takes both times from one read of the wall clock."""
        if self._pinned is not None:
            return self._pinned
        return real + self._offset

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.timestamp(), UTC)

    def pin(self, at: float) -> None:
        """Hold simulated time at `at` (never earlier than now) while jobs due then run."""
        self._pinned = max(at, self.timestamp())

    def release(self, at: float) -> None:
        """Stop pinning and continue from `at`: the offset grows so that now == at."""
        self._pinned = None
        self._offset = max(self._offset, at - time.time())

    def advance(self, seconds: float) -> None:
        self._offset += seconds

    def restore(self, offset_seconds: float) -> None:
        """Back to a saved state's offset (POST /_sim/state/{name}/restore): with reset, the
        moves that may take the offset down."""
        self._offset = float(offset_seconds)
        self._pinned = None

    def reset(self) -> None:
        """Back to real time (POST /_sim/reset): the one move that takes the offset down."""
        self._offset = 0.0
        self._pinned = None


def isoformat(moment: datetime | float) -> str:
    """ISO-8601 in UTC with millisecond precision and a Z suffix, as every payload uses.

    POSIX seconds (what the domain keeps) are formatted by hand, as `datetime.fromtimestamp(
    moment, UTC).isoformat(timespec="milliseconds")` would (with Z): the microseconds rounded
    half to even as datetime rounds them, then truncated. A payment's view formats several
    timestamps, and datetime's own formatting was a tenth of the cost of creating one."""
    if moment.__class__ is not float:
        if isinstance(moment, datetime):
            return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        moment = float(moment)
    fraction, whole = _modf(moment)
    micros = round(fraction * 1e6)
    if micros >= 1_000_000:
        micros -= 1_000_000
        whole += 1.0
    elif micros < 0:
        micros += 1_000_000
        whole -= 1.0
    prefix = _SECOND_TEXTS.get(whole)
    if prefix is None:
        if len(_SECOND_TEXTS) >= _SECOND_TEXTS_KEPT:
            _SECOND_TEXTS.clear()
        prefix = _SECOND_TEXTS[whole] = datetime.fromtimestamp(whole, UTC).isoformat()[:19]
    return prefix + _MILLIS_TEXTS[micros // 1000]


_modf = math.modf
# The text up to the second, by whole POSIX second, and each millisecond's tail: the f-string
# that wrote the tail (`f".{ms:03d}Z"`) cost more than the rest together.
_SECOND_TEXTS: dict[float, str] = {}
_SECOND_TEXTS_KEPT = 4096
_MILLIS_TEXTS = tuple(f".{ms:03d}Z" for ms in range(1000))


def parse_iso(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))
