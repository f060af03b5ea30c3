"""Durations as people write them: `90s`, `5m`, `25h`, `2d`, `1h30m`, `500ms`, or plain seconds.

Shared by `payorch clock advance`, the scenario language (`advance_clock`, `within`) and the
pytest fixture, so a duration means the same thing everywhere.
"""

from __future__ import annotations

import re

UNITS: dict[str, float] = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}
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
            seconds = sum(float(n) * UNITS[unit] for n, unit in _PART.findall(text))
    if seconds <= 0:
        raise DurationError(f"a duration must be positive: {value!r}")
    return seconds


def format_duration(seconds: float) -> str:
    """The shortest exact form: 172800 -> `2d`, 5400 -> `1h30m`, 0.25 -> `250ms`."""
    if seconds < 1:
        return f"{seconds * 1000:g}ms"
    parts = []
    rest = round(seconds, 3)
    for unit in ("d", "h", "m"):
        size = UNITS[unit]
        if rest >= size:
            count = int(rest // size)
            parts.append(f"{count}{unit}")
            rest = round(rest - count * size, 3)
    if rest or not parts:
        parts.append(f"{rest:g}s")
    return "".join(parts)
