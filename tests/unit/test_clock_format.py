"""Timestamps in payloads: the fast formatter writes exactly what datetime would.

`isoformat` formats POSIX seconds by hand (whole seconds cached) instead of through datetime's
own isoformat; these pin it to the reference at the rounding edges datetime has: microseconds
rounded half to even, a fraction that rounds up into the next second, negative times.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from simulator.clock import isoformat


def reference(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


EDGES = [0.9999995, 0.0000005, 0.0000015, 0.9995, 0.0005, 0.999999, 1e-7, 0.5, 0.0]


@settings(max_examples=3000, deadline=None)
@given(
    st.one_of(
        st.floats(min_value=-1e9, max_value=2.5e11, allow_nan=False),
        st.builds(
            lambda whole, edge: whole + edge,
            st.integers(min_value=-(10**9), max_value=4 * 10**9),
            st.sampled_from(EDGES),
        ),
        st.integers(min_value=-(10**9), max_value=4 * 10**9),
    )
)
@example(1_767_225_599.9999995)  # rounds up into the next second, the next day and year
@example(1_700_000_000.0005)
def test_posix_seconds_format_as_datetime_does(moment: float) -> None:
    assert isoformat(moment) == reference(moment)


def test_the_same_second_formats_the_same_twice() -> None:
    assert isoformat(1_700_000_000.25) == isoformat(1_700_000_000.25) == "2023-11-14T22:13:20.250Z"


@pytest.mark.parametrize(
    "moment",
    [datetime(2026, 1, 2, 3, 4, 5, 678_901, tzinfo=UTC), datetime(2026, 1, 2, 3, 4, 5)],
)
def test_datetimes_still_format_in_utc(moment: datetime) -> None:
    expected = moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert isoformat(moment) == expected
