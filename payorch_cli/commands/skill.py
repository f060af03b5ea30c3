"""`payorch skill [--llms-txt]`: print the Agent Skill (`SKILL.md`) or the `llms.txt` shipped in
the package, for a coding agent's skills folder or context."""

from __future__ import annotations

import sys
from typing import Annotated

import typer


def skill(
    llms_txt: Annotated[
        bool, typer.Option("--llms-txt", help="Print llms.txt instead of SKILL.md.")
    ] = False,
) -> None:
    """Print the Agent Skill for coding agents, or llms.txt.

    Example: mkdir -p .claude/skills/payorch && payorch skill > .claude/skills/payorch/SKILL.md
    """
    from importlib.resources import files

    name = "llms.txt" if llms_txt else "SKILL.md"
    sys.stdout.write(files("payorch_cli.agent").joinpath(name).read_text(encoding="utf-8"))
