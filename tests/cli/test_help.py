"""Help as a new user meets it: `-h` wherever `--help` works, `--version`, and every command
list's summaries whole on one line at 80 columns (click cuts a summary that does not fit with
`...`, at any width: its help formatter never grows past 78 columns)."""

from __future__ import annotations

import functools
import subprocess
from importlib import metadata

import click
import pytest
import typer
from typer.testing import CliRunner

from payorch_cli.main import app
from tests.cli.test_serve import PAYORCH
from tests.cli.test_usage import command_paths

runner = CliRunner()


@functools.cache
def help_page(path: tuple[str, ...]) -> tuple[int, str]:
    """`payorch PATH --help` at 80 columns, rendered once per process: the pages are the same
    for each test that reads them, and rendering them was most of this file's time."""
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "80"})
    return result.exit_code, result.output


def group_paths() -> list[list[str]]:
    """The root and every command group, as the words that name them."""
    found: list[list[str]] = []

    def walk(command: click.Command, path: list[str]) -> None:
        subcommands = getattr(command, "commands", None)
        if subcommands is None:
            return
        found.append(path)
        for name, sub in subcommands.items():
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return found


NOT_COMMANDS = ("Usage:", "Arguments:", "Options:", "Examples:")


def command_sections(output: str) -> dict[str, list[str]]:
    """The sections of a help page that list commands (`Commands:`, or the root's panels), by
    heading, each with its lines."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in output.splitlines():
        if line and not line.startswith(" "):
            heading = not line.startswith(NOT_COMMANDS) and line.endswith(":")
            current = sections.setdefault(line, []) if heading else None
        elif current is not None and line.strip():
            current.append(line)
    return sections


def command_list(output: str) -> list[str]:
    """The lines of every section of a help page that lists commands."""
    return [line for lines in command_sections(output).values() for line in lines]


@pytest.mark.parametrize("path", group_paths(), ids=lambda path: " ".join(["payorch", *path]))
def test_every_summary_is_whole_on_one_line_at_80_columns(path: list[str]) -> None:
    exit_code, output = help_page(tuple(path))
    assert exit_code == 0, output
    section = command_list(output)
    assert section
    for line in section:
        assert len(line) <= 80, line
        # A summary that wrapped continues on an indented line without a command name.
        assert line.startswith("  ") and not line.startswith("   "), section
        assert not line.endswith("..."), f"cut summary: {line.strip()!r}"


@pytest.mark.parametrize("path", [[], *command_paths()], ids=lambda path: " ".join(path) or "root")
def test_dash_h_is_help_everywhere(path: list[str]) -> None:
    long = help_page(tuple(path))
    short = runner.invoke(app, [*path, "-h"], env={"COLUMNS": "80"})
    assert short.exit_code == 0, short.output
    assert (short.exit_code, short.output) == long
    assert "-h, --help" in short.output


def test_version_prints_the_installed_version() -> None:
    result = subprocess.run(
        [*PAYORCH, "--version"], capture_output=True, text=True, timeout=30, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"payorch {metadata.version('payorch')}\n"


@pytest.mark.parametrize("path", [[], *command_paths()], ids=lambda path: " ".join(path) or "root")
def test_help_names_values_in_words_not_python_types(path: list[str]) -> None:
    """`--user-email EMAIL`, `DURATION`, `[paid|failed]`: never `<str>`, `<list[Path]>`,
    `DURATION <float>` (typer's default shows the annotation's Python type)."""
    import re

    exit_code, page = help_page(tuple(path))
    assert exit_code == 0, page
    assert re.findall(r"<[^>\s]+>", page) == [], page


def test_every_option_and_argument_says_what_it_takes() -> None:
    """`simulate deposit --payer-name`, `payments create --user-email` and the list filters had
    no help: a row with a name and nothing after it."""
    silent: list[str] = []

    def walk(command: click.Command, path: list[str]) -> None:
        subcommands = getattr(command, "commands", None)
        if subcommands is not None:
            for name, sub in subcommands.items():
                walk(sub, [*path, name])
            return
        for param in command.params:
            if not getattr(param, "hidden", False) and not getattr(param, "help", None):
                silent.append(" ".join([*path, param.opts[0]]))

    walk(typer.main.get_command(app), [])
    assert silent == []


def test_the_root_lists_commands_in_five_groups() -> None:
    """`payorch --help` listed 30 commands in no order; now under typer's rich_help_panel
    headings (main.py), which click's plain help draws through options.Group."""
    page = runner.invoke(app, ["--help"], env={"COLUMNS": "80"}).output
    sections = command_sections(page)
    assert list(sections) == [
        "Serve and tools:",
        "Resources:",
        "Simulation:",
        "Observation:",
        "Namespaces and team:",
    ]
    named = {heading: {line.split()[0] for line in lines} for heading, lines in sections.items()}
    assert {"serve", "keys", "tui", "mcp"} <= named["Serve and tools:"]
    assert named["Resources:"] == {"payments", "payouts", "balance", "methods"}
    assert {"simulate", "trigger", "clock", "state"} <= named["Simulation:"]
    assert {"listen", "logs", "trace", "coverage"} <= named["Observation:"]
    assert named["Namespaces and team:"] == {"ns", "team"}
    every = [line.split()[0] for lines in sections.values() for line in lines]
    assert len(every) == len(set(every)) == len(typer.main.get_command(app).commands)  # type: ignore[attr-defined]  # the root is a group
    # One column for the summaries across the groups, as in one list.
    assert len({line.index(line.split()[1]) for lines in sections.values() for line in lines}) == 1
