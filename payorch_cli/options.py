"""Shared option aliases, declared once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from simulator.settings import DEFAULT_DATA_DIR

DataDir = Annotated[
    Path,
    typer.Option("--data-dir", help="Where the store lives (one server per data dir)."),
]
Fixtures = Annotated[
    Path | None,
    typer.Option(
        "--fixtures",
        help="A directory with merchants.yaml, payment_methods.yaml, providers.yaml and fx.yaml "
        "(default: the built-in fixtures).",
        exists=True,
        file_okay=False,
    ),
]
Json = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
DEFAULT_DATA = DEFAULT_DATA_DIR
