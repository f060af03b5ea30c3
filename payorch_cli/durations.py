"""Durations as people write them: `90s`, `5m`, `25h`, `2d`, `1h30m`, `500ms`, or plain seconds.

Shared by `payorch clock advance`, the scenario language (`advance_clock`, `within`) and the
pytest fixture, so a duration means the same thing everywhere.
"""

from __future__ import annotations

import re
from decimal import Decimal

UNITS: dict[str, float] = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}
# In milliseconds, exact: parsing sums decimals and formatting divides integers, so no binary
# fraction (60 + 54.502 = 114.50200000000001) leaks into a value or onto the screen.
_MS: dict[str, Decimal] = {unit: Decimal(str(size)) * 1000 for unit, size in UNITS.items()}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
_WHOLE = re.compile(r"(?:\d+(?:\.\d+)?(?:ms|s|m|h|d|w))+")


class DurationError(ValueError):
    pass


def parse_duration(value: str | int | float) -> float:
    """Seconds in `value`; a bare number is seconds. Raises DurationError with a usable hint."""
    if isinstance(value, bool):
        raise DurationError(f"not a duration: {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        text = value.strip().replace(" ", "")
        try:
            seconds = float(text)
        except ValueError:
            if not _WHOLE.fullmatch(text):
                raise DurationError(
                    f"not a duration: {value!r} (write e.g. 90s, 5m, 25h, 2d, 1h30m, 500ms)"
                ) from None
            millis = sum(Decimal(n) * _MS[unit] for n, unit in _PART.findall(text))
            seconds = float(millis / 1000)
    if seconds <= 0 or seconds != seconds or seconds == float("inf"):
        raise DurationError(f"a duration must be positive: {value!r}")
    return seconds


def format_duration(seconds: float, *, resolution: float = 0.001) -> str:
    """The shortest exact form, to the millisecond: 172800 -> `2d`, 5400 -> `1h30m`,
    0.25 -> `250ms`, 114.502 -> `1m54.502s`; `parse_duration` reads it back as the same value.

    `resolution` rounds first (half up), for a value whose small digits are noise: a clock
    offset moves by the real time the due jobs took while it was advanced, so `clock show`
    formats it to the second rather than as `5d1h6m29.999s`."""
    exact = Decimal(repr(float(seconds))) * 1000  # the float's shortest decimal, in ms
    step = max(1, round(Decimal(str(resolution)) * 1000))
    millis = int((exact / step).quantize(Decimal(1), "ROUND_HALF_UP")) * step
    if millis < 1000:
        if millis == 0 and exact > 0:  # under a millisecond: its digits, not `0ms`
            return f"{exact.normalize():f}ms"
        return f"{millis}ms"
    parts = []
    for unit in ("d", "h", "m"):
        count, millis = divmod(millis, int(_MS[unit]))
        if count:
            parts.append(f"{count}{unit}")
    whole, fraction = divmod(millis, 1000)
    if fraction:
        parts.append(f"{whole}.{fraction:03d}".rstrip("0") + "s")
    elif whole or not parts:
        parts.append(f"{whole}s")
    return "".join(parts)
