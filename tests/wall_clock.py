"""Run the suite as if the wall clock stood at a chosen moment of the week.

The simulated clock is real time plus an offset, so a test's simulated time, and which 5-minute
poll, midnight settlement or weekend it meets when it advances, depends on when the suite runs.
A test that passes at 11:00 and fails at 23:58 is a flake CI meets some day: set
`PAYORCH_TEST_WALL_CLOCK="Sun 23:59:30"` (a weekday and a UTC time) and, before each test, the
simulator's clock reads the wall clock as if it were then (only simulator/clock.py reads it for
simulated time). Tests that compare simulated time with the real wall clock carry the
`real_wall_clock` marker and are left alone. Scenarios run by tests/scenarios in a subprocess
are not shifted.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

import simulator.clock

VARIABLE = "PAYORCH_TEST_WALL_CLOCK"
WEEK = 7 * 86_400
MONDAY_EPOCH = 4 * 86_400  # 1970-01-05 was a Monday
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


def seconds_into_week(text: str) -> float:
    """`Sun 23:59:30` -> seconds since Monday 00:00 UTC."""
    try:
        day, clock_time = text.split()
        hours, minutes, seconds = (int(part) for part in clock_time.split(":"))
        weekday = WEEKDAYS.index(day[:3].lower())
    except ValueError:
        raise pytest.UsageError(
            f"{VARIABLE}={text!r}: expected a weekday and a UTC time, e.g. 'Sun 23:59:30'"
        ) from None
    return weekday * 86_400 + hours * 3600 + minutes * 60 + seconds


class ShiftedTime:
    """The `time` module as simulator/clock.py sees it, `shift` seconds ahead."""

    def __init__(self, shift: float) -> None:
        self.shift = shift

    def time(self) -> float:
        return time.time() + self.shift

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"real_wall_clock: compares simulated time with the real one ({VARIABLE})"
    )
    target = os.environ.get(VARIABLE)
    if target:
        seconds_into_week(target)  # a mistyped moment stops the run before any test


@pytest.fixture(autouse=True)
def wall_clock_shift(request: pytest.FixtureRequest) -> Iterator[None]:
    target = os.environ.get(VARIABLE)
    if not target or request.node.get_closest_marker("real_wall_clock"):
        yield
        return
    phase = (time.time() - MONDAY_EPOCH) % WEEK
    shift = (seconds_into_week(target) - phase) % WEEK
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(simulator.clock, "time", ShiftedTime(shift))
        yield
