"""`payorch clock show|advance` and the duration syntax they share with scenarios."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from payorch_cli.main import app
from payorch_cli.scenario.durations import DurationError, format_duration, parse_duration
from payorch_cli.scenario.fixture import Payorch

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


@pytest.mark.parametrize("bad", ["", "2x", "h", "-5m", "0s", "5 m x", "1d-2h"])
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
