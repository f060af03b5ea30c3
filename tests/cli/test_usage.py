"""Usage lines and usage errors: arguments named the conventional way (`ID ACTION`, `PATHS...`),
bad values told in plain words with the valid choices, and the closest match suggested for an
unknown event name or subcommand."""

from __future__ import annotations

import re

import click
import pytest
import typer
from typer.testing import CliRunner

from payorch_cli.main import app

runner = CliRunner()
DEAD = "http://127.0.0.1:9"  # discard port: nothing listens there


def command_paths() -> list[list[str]]:
    """Every command of the CLI, as the words that name it."""
    found: list[list[str]] = []

    def walk(command: click.Command, path: list[str]) -> None:
        subcommands = getattr(command, "commands", None)
        if subcommands is None:
            found.append(path)
            return
        for name, sub in subcommands.items():
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return found


# Options in brackets, then arguments in capitals: `[NAME]` when optional, `...` when repeated.
USAGE = re.compile(r"Usage: payorch [a-z -]+ \[OPTIONS\]( \[?[A-Z]+\]?(\.\.\.)?)*")


@pytest.mark.parametrize("path", command_paths(), ids=" ".join)
def test_usage_lines_name_arguments_conventionally(path: list[str]) -> None:
    result = runner.invoke(app, [*path, "--help"])
    assert result.exit_code == 0, result.output
    usage = result.output.splitlines()[0]
    assert USAGE.fullmatch(usage), usage


@pytest.mark.parametrize(
    ("path", "usage"),
    [
        (["simulate", "payment"], "payorch simulate payment [OPTIONS] ID ACTION"),
        (["simulate", "payout"], "payorch simulate payout [OPTIONS] ID ACTION"),
        (["scenario", "run"], "payorch scenario run [OPTIONS] PATHS..."),
        (["scenario", "validate"], "payorch scenario validate [OPTIONS] PATHS..."),
        (["webhooks", "audit"], "payorch webhooks audit [OPTIONS] URL"),
        (["clock", "advance"], "payorch clock advance [OPTIONS] DURATION"),
        (["trigger"], "payorch trigger [OPTIONS] EVENT"),
    ],
)
def test_usage_of_commands_with_arguments(path: list[str], usage: str) -> None:
    assert runner.invoke(app, [*path, "--help"]).output.splitlines()[0] == f"Usage: {usage}"


def error_of(args: list[str]) -> str:
    result = runner.invoke(app, ["--base-url", DEAD, *args])
    assert result.exit_code == 2, result.output
    return result.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (
            ["simulate", "payment", "TXN-1", "refund"],
            "Error: Invalid value for 'ACTION': 'refund' is not one of paid, failed, expired, "
            "refunded, chargeback (did you mean 'refunded'?)",
        ),
        (
            ["simulate", "payout", "po_1", "Complete"],
            "Error: Invalid value for 'ACTION': 'Complete' is not one of completed, paid, "
            "failed, rejected, refunded, returned, processing (did you mean 'completed'?)",
        ),
        (
            ["serve", "--port", "eighty"],
            "Error: Invalid value for '--port': 'eighty' is not a whole number",
        ),
        (
            ["serve", "--port", "80.5"],
            "Error: Invalid value for '--port': '80.5' is not a whole number",
        ),
        (
            ["trigger", "payment.completed", "--timeout", "soon"],
            "Error: Invalid value for '--timeout': 'soon' is not a number of seconds",
        ),
        (
            ["simulate", "deposit", "--clabe", "646180", "--amount", "ten"],
            "Error: Invalid value for '--amount': 'ten' is not an amount (write e.g. 500 or 12.50)",
        ),
        (  # float() reads it, JSON cannot carry it
            ["simulate", "deposit", "--clabe", "646180", "--amount", "nan"],
            "Error: Invalid value for '--amount': 'nan' is not an amount (write e.g. 500 or 12.50)",
        ),
        (  # was a traceback from bind()
            ["serve", "--port", "70000"],
            "Error: Invalid value for '--port': '70000' is too large: the largest allowed is 65535",
        ),
        (
            ["serve", "--request-log", "-1"],
            "Error: Invalid value for '--request-log': '-1' is too small: the smallest allowed "
            "is 0",
        ),
        (
            ["record", "--last", "0"],
            "Error: Invalid value for '--last': '0' is too small: the smallest allowed is 1",
        ),
        (  # was the server's pattern, ^([1-5][xX][xX]|[1-5][0-9][0-9])$, after a request
            ["logs", "tail", "--status", "abc"],
            "Error: Invalid value for '--status': 'abc' is not a status: write a class (2xx, "
            "4xx, 5xx) or one status (404)",
        ),
        (  # was a traceback from settimeout(nan)
            ["webhooks", "audit", "http://127.0.0.1:9/", "--secret", "s", "--timeout", "nan"],
            "Error: Invalid value for '--timeout': 'nan' is not a positive number of seconds",
        ),
        (
            ["trigger", "payment.completed", "--timeout", "0"],
            "Error: Invalid value for '--timeout': '0' is not a positive number of seconds",
        ),
    ],
)
def test_bad_values_are_told_in_plain_words(args: list[str], error: str) -> None:
    assert error_of(args) == error


def test_no_pydantic_wording_reaches_the_user() -> None:
    for args in (
        ["simulate", "payment", "TXN-1", "nope"],
        ["serve", "--port", "x"],
        ["webhooks", "audit", "http://127.0.0.1:9/", "--secret", "s", "--timeout", "x"],
        ["clock", "advance", "2x"],
        ["serve", "--port", "-1"],
        ["serve", "--request-log", "-5"],
        ["record", "--last", "-1"],
    ):
        line = error_of(args)
        assert "Input should" not in line and "Value error" not in line, line


def test_unknown_event_names_suggest_the_closest() -> None:
    trigger = error_of(["trigger", "payment.complete"])
    assert "unknown event 'payment.complete' (did you mean 'payment.completed'?)" in trigger
    listen = error_of(["listen", "--events", "payment.completed,claim.open"])
    assert "Invalid value for '--events': unknown event 'claim.open' (did you mean " in listen
    assert "'claim.opened'?)" in listen
    alone = error_of(["listen", "--events", "*,payment.completed"])
    assert "`*` means every event: give it alone" in alone


@pytest.mark.parametrize(
    ("args", "suggestion"),
    [
        (["clok", "show"], "Did you mean 'clock'?"),
        (["scenario", "valdate"], "Did you mean 'validate'?"),
        (["webhook", "audit"], "Did you mean 'webhooks'?"),
    ],
)
def test_unknown_subcommands_suggest_the_closest(args: list[str], suggestion: str) -> None:
    assert error_of(args).endswith(suggestion)
