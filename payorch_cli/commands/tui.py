"""`payorch tui`: the live console. Textual is imported inside the command body only."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from payorch_cli.options import BaseUrl, ExitStatus, Fixtures, resolve

# Repeatable, unlike the global --api-key: the first key is used, every one is offered by the
# key switcher (k) beside the fixture keys that `payorch keys` lists.
ApiKeys = Annotated[
    list[str] | None,
    typer.Option(
        "--api-key",
        help="A secret key (env PAYORCH_API_KEY; default: the fixture sandbox key). Repeat it "
        "to offer more keys in the switcher (k).",
        metavar="KEY",
        show_default=False,
    ),
]


DriftReport = Annotated[
    Path | None,
    typer.Option(
        "--drift",
        help="A report of `payorch drift --json`, shown by the Drift screen (6).",
        metavar="FILE",
        show_default=False,
    ),
]


def tui(
    ctx: typer.Context,
    base_url: BaseUrl = None,
    api_key: ApiKeys = None,
    fixtures: Fixtures = None,
    drift: DriftReport = None,
) -> None:
    """A live terminal console of the server (keyboard-first).

    Transactions, balances, webhook deliveries, the request log, the providers and a drift
    report; --namespace NAME watches that namespace (n switches).
    """
    keys = list(api_key or [])
    globals_ = resolve(ctx, base_url, keys[0] if keys else None)
    if globals_.api_key and globals_.api_key not in keys:
        keys.insert(0, globals_.api_key)
    if drift is not None:
        _check_report(drift)

    from payorch_cli.tui.app import run

    run(globals_.base_url, keys, fixtures, globals_.namespace, drift)


def _check_report(path: Path) -> None:
    """A file that is not a drift report ends the command with one line, before the TUI."""
    from payorch_cli.drift.report import ReportError, read_report

    try:
        read_report(path)
    except ReportError as exc:
        sys.stderr.write(f"payorch tui: --drift {exc}\n")
        raise typer.Exit(ExitStatus.USAGE) from None
