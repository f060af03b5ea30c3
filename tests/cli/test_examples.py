"""Examples on every help page, from the one table in payorch_cli/examples.py, that cannot go
stale: every line parses as a command of this CLI with valid options and values, and the ones
that need nothing printed earlier (no `TXN-...`) run against a server (issue 36 item 8)."""

from __future__ import annotations

import shlex
from typing import Any

import pytest
import typer
from typer._click.exceptions import UsageError  # typer's own click, which the CLI runs on
from typer.testing import CliRunner

from payorch_cli.examples import EXAMPLES
from payorch_cli.main import app
from payorch_cli.scenario.fixture import Payorch
from tests.cli.test_help import group_paths
from tests.cli.test_usage import command_paths

runner = CliRunner()
EVERY_PAGE = [[], *group_paths()[1:], *command_paths()]
EVERY_LINE = [line for lines in EXAMPLES.values() for line in lines]
# Commands whose examples change nothing outside the server they are given, or only what the
# fixture's server is there for; serve, tui, listen, mcp, proxy and logs tail never return.
RUN = (
    "payments create", "payments list", "payouts send", "payouts list", "balance", "methods",
    "clock show", "clock advance", "providers", "providers show", "providers set",
    "providers incident", "providers end", "providers reset", "trigger", "reset",
    "state save", "state restore", "state list", "state delete", "coverage",
    "ns create", "ns show", "ns list", "ns delete",
)  # fmt: skip


def words(line: str) -> list[str]:
    """The arguments after `payorch`, as a shell would pass them, up to a pipe or a redirect."""
    lexer = shlex.shlex(line.replace("\\\n", " "), posix=True, punctuation_chars="|>")
    lexer.whitespace_split = True
    found: list[str] = []
    for word in lexer:
        if word in ("|", ">", ">>"):
            break
        found.append(word)
    assert found[0] == "payorch", line
    return found[1:]


def parse(args: list[str]) -> Any:
    """The command `args` names, after click parsed and converted every option and argument of
    it (a usage error raises, as it would exit 2 in a terminal)."""
    command: Any = typer.main.get_command(app)
    ctx = command.make_context("payorch", list(args))
    while getattr(command, "commands", None) is not None:
        rest = [*getattr(ctx, "_protected_args", []), *ctx.args]
        if not rest:
            break
        name, command, rest = command.resolve_command(ctx, rest)
        ctx = command.make_context(name, rest, parent=ctx)
    return command


def path_of(line: str) -> str:
    """The command path an example runs (`payments create`), options and values left out."""
    names: list[str] = []
    command: Any = typer.main.get_command(app)
    for word in words(line):
        sub = getattr(command, "commands", {}).get(word)
        if sub is None:
            break
        names.append(word)
        command = sub
    return " ".join(names)


@pytest.mark.parametrize("path", EVERY_PAGE, ids=lambda path: " ".join(path) or "root")
def test_every_page_ends_with_its_examples_within_80_columns(path: list[str]) -> None:
    page = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "80"}).output
    lines = page.splitlines()
    examples = EXAMPLES[" ".join(path)]
    assert 1 <= len(examples) <= 3
    start = lines.index("Examples:")
    shown = "\n".join(line.removeprefix("  ") for line in lines[start + 1 :])
    assert shown == "\n".join(examples)
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]


def test_the_table_names_only_commands_that_exist() -> None:
    pages = {" ".join(path) for path in EVERY_PAGE}
    assert set(EXAMPLES) == pages


@pytest.mark.parametrize("line", EVERY_LINE)
def test_every_example_is_a_valid_command_line(line: str) -> None:
    parse(words(line))


def test_an_example_with_a_removed_option_is_caught() -> None:
    with pytest.raises(UsageError, match="no-such-option"):
        parse(words("payorch payments create --amount 10 --no-such-option"))
    with pytest.raises(typer.BadParameter):
        parse(words("payorch clock advance soon"))


@pytest.mark.long(12)
def test_the_runnable_examples_run(payorch: Payorch) -> None:
    ran = []
    for line in dict.fromkeys(EVERY_LINE):  # a group's page repeats one of its commands'
        if "..." in line or path_of(line) not in RUN:
            continue
        result = runner.invoke(app, ["--base-url", payorch.base_url, *words(line)])
        assert result.exit_code == 0, (line, result.output)
        ran.append(line)
    assert {path_of(line) for line in ran} == set(RUN)
