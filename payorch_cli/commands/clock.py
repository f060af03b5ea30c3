"""`payorch clock show|advance DURATION`: read or move the simulated clock (design.md 1.3)."""

from __future__ import annotations

from typing import Annotated

import typer

from payorch_cli.options import ApiKey, BaseUrl, Json, api_errors, command_group, emit, resolve

app = command_group("Read or move the simulated clock (sandbox credentials).")


def _duration(value: str) -> float:
    from payorch_cli.durations import DurationError, parse_duration

    try:
        return parse_duration(value)
    except DurationError as exc:
        raise typer.BadParameter(str(exc)) from None


@app.command("show")
def show(
    ctx: typer.Context, base_url: BaseUrl = None, api_key: ApiKey = None, as_json: Json = False
) -> None:
    """Print the simulated time and how far it is ahead of real time."""
    from payorch_cli.render.objects import clock_text

    options = resolve(ctx, base_url, api_key, as_json)
    with api_errors("clock show"):
        state = options.client().get("/_sim/clock")
    emit(options, state, lambda: clock_text(state))


@app.command("advance")
def advance(
    ctx: typer.Context,
    duration: Annotated[
        float,
        typer.Argument(
            help="How far: 90s, 5m, 25h, 2d, 1h30m, 500ms, or plain seconds.",
            parser=_duration,
            metavar="DURATION",
        ),
    ],
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Move the clock forward, running the jobs that fall due.

    Every job that falls due on the way runs, in time order.
    """
    from payorch_cli.render.objects import clock_text

    options = resolve(ctx, base_url, api_key, as_json)
    with api_errors("clock advance"):
        state = options.client().post("/_sim/clock/advance", {"seconds": duration})
    emit(options, state, lambda: clock_text(state))
