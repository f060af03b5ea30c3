"""Textual is imported by `payorch tui` only: help and the other commands stay fast."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("textual", "aiohttp")


def loaded_after(args: list[str]) -> list[str]:
    code = (
        "import sys; from typer.testing import CliRunner; from payorch_cli.main import app; "
        f"r = CliRunner().invoke(app, {args!r}); assert r.exit_code == 0, r.output; "
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True
    )
    return [name for name in done.stdout.strip().split(",") if name]


@pytest.mark.parametrize(
    "args",
    [["--help"], ["tui", "--help"], ["keys", "--json"], ["listen", "--help"]],
    ids=["root-help", "tui-help", "keys", "listen-help"],
)
def test_no_textual_outside_the_tui(args: list[str]) -> None:
    assert "textual" not in loaded_after(args)


def test_the_tui_command_module_is_light() -> None:
    code = (
        "import sys; import payorch_cli.commands.tui; "
        "assert 'textual' not in sys.modules and 'payorch_cli.tui' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=30)
