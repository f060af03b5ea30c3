"""`payorch completion bash|zsh|fish`: print the shell's completion script.

No shell detection (typer's `--install-completion` guesses the shell from the parent process,
which is wrong in containers, CI and `sudo`): the user names the shell and decides where the
script goes, for example `payorch completion bash > ~/.local/share/bash-completion/completions/
payorch`. The script is typer's own, produced through its documented environment variable, so it
stays in step with how typer answers Tab at run time.
"""

from __future__ import annotations

import os
from enum import StrEnum
from typing import Annotated

import typer

COMPLETE_VAR = "_PAYORCH_COMPLETE"


class Shell(StrEnum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"


def completion(
    ctx: typer.Context,
    shell: Annotated[Shell, typer.Argument(help="bash, zsh or fish.", metavar="SHELL")],
) -> None:
    """Print the completion script for SHELL (bash, zsh or fish).

    Completes commands, options, event names, payment method ids, namespaces, saved states
    and fixture merchants (asking the server where needed, quickly, silently when there is
    none).
    """
    root = ctx.find_root().command  # the whole CLI, as typer built it for this run
    os.environ[COMPLETE_VAR] = f"source_{shell.value}"
    try:
        root.main(args=[], prog_name="payorch", standalone_mode=False)
    finally:
        os.environ.pop(COMPLETE_VAR, None)
