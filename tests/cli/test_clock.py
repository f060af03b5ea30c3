"""`payorch clock show|advance` and the duration syntax they share with scenarios."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from payorch_cli.durations import DurationError, format_duration, parse_duration
from payorch_cli.main import app
from payorch_cli.render.objects import clock_text
from payorch_cli.scenario.fixture import Payorch
from payorch_cli.tui.screens.dialogs import parse_duration as dialog_duration

runner = CliRunner()


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90),
        ("5m", 300),
        ("25h", 90_000),
        ("2d", 172_800),
        ("1h30m", 5400),
        ("500ms", 0.5),
        ("1w", 604_800),
        ("1.5h", 5400),
        ("42", 42),
        (7, 7),
    ],
)
def test_durations(text: str | int, seconds: float) -> None:
    assert parse_duration(text) == seconds
    assert parse_duration(format_duration(seconds)) == seconds


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (114.502, "1m54.502s"),  # parsed as 60 + 54.502 = 114.50200000000001 in floats
        (457.035, "7m37.035s"),
        (0.1 + 0.2, "300ms"),
        (0.0004, "0.4ms"),
        (60.1, "1m0.1s"),
        (2.675, "2.675s"),
        (90_061.001, "1d1h1m1.001s"),
    ],
)
def test_formatting_is_exact_to_the_millisecond(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert format_duration(parse_duration(text)) == text


@given(st.integers(min_value=1, max_value=10**12))
def test_every_millisecond_value_round_trips(millis: int) -> None:
    seconds = millis / 1000
    assert parse_duration(format_duration(seconds)) == seconds


@pytest.mark.parametrize(
    ("text", "seconds"), [("0.1h", 360), ("0.7d", 60_480), ("1m54.502s", 114.502)]
)
def test_parsing_sums_decimals(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds  # 0.7 * 86400 is 60479.99999999999 in floats


def test_the_clock_offset_is_shown_to_the_second() -> None:
    # The offset grows by the real time the due jobs took while the clock was advanced.
    shown = clock_text({"now": "2026-05-04T12:00:00.000Z", "offsetSeconds": 436_589.999})
    assert shown.endswith("(simulated; 5d1h16m30s ahead of real time)"), shown
    small = clock_text({"now": "2026-05-04T12:00:00.000Z", "offsetSeconds": 1.5})
    assert "1.5s ahead" in small


def test_the_tui_reads_durations_as_the_cli_does() -> None:
    assert dialog_duration("1d 6h") == parse_duration("1d6h") == 108_000
    assert dialog_duration("0.7D") == 60_480
    assert dialog_duration("500ms") == 0.5
    assert dialog_duration("soon") is None


@pytest.mark.parametrize("bad", ["", "2x", "h", "-5m", "0s", "5 m x", "1d-2h", "nan", "inf"])
def test_bad_durations(bad: str) -> None:
    with pytest.raises(DurationError):
        parse_duration(bad)


def test_show_and_advance(payorch: Payorch) -> None:
    base = ["--base-url", payorch.base_url]
    shown = runner.invoke(app, [*base, "clock", "show"])
    assert shown.exit_code == 0 and "simulated" in shown.stdout
    moved = runner.invoke(app, [*base, "--json", "clock", "advance", "25h"])
    assert moved.exit_code == 0, moved.output
    state = json.loads(moved.stdout)
    assert 90_000 <= state["offsetSeconds"] < 90_001
    human = runner.invoke(app, [*base, "clock", "advance", "90s"])
    assert human.exit_code == 0 and "1d1h1m30s ahead of real time" in human.stdout


def test_advance_refuses_a_bad_duration_before_calling_anything() -> None:
    result = runner.invoke(app, ["--base-url", "http://127.0.0.1:9", "clock", "advance", "2x"])
    assert result.exit_code == 2
    assert "not a duration: '2x'" in result.output
