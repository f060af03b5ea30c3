"""The Agent Skill and llms.txt shipped in the package: regenerated from the CLI and the OpenAPI
document they match the shipped files byte for byte, and every command, option and MCP tool
they name exists."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import anyio
import pytest
from typer import Context
from typer.main import get_command

from payorch_cli.agent import generate
from payorch_cli.main import app
from tests.cli.mcp_session import session, stdio


@pytest.mark.parametrize(
    ("shipped", "made"),
    [(generate.SKILL_FILE, generate.skill_md), (generate.LLMS_FILE, generate.llms_txt)],
)
def test_the_shipped_files_are_what_the_generator_makes(shipped: Any, made: Any) -> None:
    assert shipped.read_text(encoding="utf-8") == made(), (
        f"{shipped.name} is stale: run `python -m payorch_cli.agent.generate`"
    )


def _command(words: list[str]) -> tuple[Any, list[str]]:
    """The deepest command `words` name, and the words after it."""
    command: Any = get_command(app)
    while words and hasattr(command, "list_commands"):
        child = command.get_command(Context(command), words[0])
        if child is None:
            break
        command, words = child, words[1:]
    return command, words


@pytest.mark.long(17)
def test_every_command_and_option_the_skill_names_exists() -> None:
    text = generate.SKILL_FILE.read_text(encoding="utf-8")
    named = re.findall(r"`(payorch(?: [^`]*)?)`", text)
    assert len(named) > 20
    for line in named:
        words = line.split()[1:]
        command, rest = _command(list(words))
        assert not hasattr(command, "list_commands") or not rest, f"no command in `{line}`"
        options = {opt for param in command.params for opt in getattr(param, "opts", [])}
        root_options = {opt for param in get_command(app).params for opt in param.opts}
        for word in rest:
            if word.startswith("--"):
                assert word in options | root_options, f"`{line}`: no option {word}"


def test_every_mcp_tool_the_skill_names_exists() -> None:
    guide = (generate.HERE / "guide.md").read_text(encoding="utf-8")
    as_tools = guide[guide.index("As tools") : guide.index("From a shell")]
    named = set(re.findall(r"`([a-z]+(?:_[a-z]+)+)`", as_tools))
    assert len(named) >= 8

    async def tools() -> set[str]:
        async with session(stdio()) as client:
            listed = await client.list_tools()
            return {tool.name for tool in listed.tools}

    assert named <= anyio.run(tools)


def test_payorch_skill_prints_the_shipped_files() -> None:
    for flags, shipped in (([], generate.SKILL_FILE), (["--llms-txt"], generate.LLMS_FILE)):
        done = subprocess.run(
            [sys.executable, "-m", "payorch_cli.main", "skill", *flags],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == shipped.read_text(encoding="utf-8")
