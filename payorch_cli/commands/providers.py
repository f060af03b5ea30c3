"""`payorch providers [--json]`, `providers show|set|incident|end|reset`: script the simulated
providers behind the cascade (design.md 1.5), on the simulated clock.

Any sandbox secret key may call these (the simulator operator's role); the behaviours they set
apply to the PRODUCTION flows of every merchant. The sandbox cascade always accepts.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer

from payorch.vocabulary import (
    PROVIDER_BEHAVIOURS,
    PROVIDER_BEHAVIOURS_BY_KIND,
    PROVIDER_CALLBACK_MODES,
    PROVIDER_CALLBACK_OUTCOMES,
)
from payorch.vocabulary import PROVIDER_CALLBACK_OUTCOMES_BY_KIND as OUTCOMES_BY_KIND
from payorch_cli.options import (
    ApiKey,
    BaseUrl,
    ExitStatus,
    Json,
    api_errors,
    command_group,
    emit,
    resolve,
)
from payorch_cli.render.providers import PRODUCTION_ONLY

app = command_group(
    "List and script the simulated providers behind the cascade.\n\nBehaviours, decline rates, "
    "callbacks, incidents on the simulated clock. " + PRODUCTION_ONLY,
    no_args_is_help=False,
    invoke_without_command=True,
)


# The choices of the options below: payorch.vocabulary's table, which the server checks too.
Behaviour = StrEnum("Behaviour", {b: b for b in PROVIDER_BEHAVIOURS})  # type: ignore[misc]  # members from the vocabulary's table
CallbackOutcome = StrEnum("CallbackOutcome", {o: o for o in PROVIDER_CALLBACK_OUTCOMES})  # type: ignore[misc]  # members from the vocabulary's table
CallbackMode = StrEnum("CallbackMode", {m: m for m in PROVIDER_CALLBACK_MODES})  # type: ignore[misc]  # members from the vocabulary's table

BEHAVIOURS_HELP = (
    f"Pay-in providers: {', '.join(PROVIDER_BEHAVIOURS_BY_KIND['payin'])}; payout providers: "
    f"{', '.join(PROVIDER_BEHAVIOURS_BY_KIND['payout'])}."
)


def _either(values: tuple[str, ...]) -> str:
    """`a, b or c`."""
    return " or ".join(filter(None, (", ".join(values[:-1]), values[-1])))


NONE_WORDS = ("none", "never", "off", "null")


def _duration(value: str) -> float:
    from payorch_cli.durations import DurationError, parse_duration

    try:
        return parse_duration(value)
    except DurationError as exc:
        raise typer.BadParameter(str(exc)) from None


def _rate(value: str) -> float:
    try:
        rate = float(value)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not a number between 0 and 1") from None
    if not 0.0 <= rate <= 1.0:
        raise typer.BadParameter(f"{value!r} is not between 0 and 1 (0.3: three charges in ten)")
    return rate


def _duration_or_zero(value: str) -> float:
    """A duration, where `0` (and `none`) mean no delay at all."""
    if value.strip().lower() in ("0", "0s", *NONE_WORDS):
        return 0.0
    return _duration(value)


def _duration_or_never(value: str) -> float | None:
    """A duration, `0` (a payout provider confirming in its dispatch answer), or `none`: the
    provider never calls back (only the reconciliation poll settles a pay-in)."""
    if value.strip().lower() in NONE_WORDS:
        return None
    if value.strip().lower() in ("0", "0s"):
        return 0.0
    return _duration(value)


ProviderId = Annotated[str, typer.Argument(metavar="ID", help="A provider id (prv_...).")]


def _list(ctx: typer.Context, as_json: bool) -> None:
    from payorch_cli.render.providers import providers_view

    options = resolve(ctx, as_json=as_json)
    with api_errors("providers"):
        providers = options.client().get("/_sim/providers")["data"]
    emit(options, {"data": providers}, lambda: providers_view(providers))


@app.callback()
def providers(
    ctx: typer.Context, base_url: BaseUrl = None, api_key: ApiKey = None, as_json: Json = False
) -> None:
    """List every simulated provider (pay-in and payout): its rails, what it does now, its
    scheduled or active incidents and counts of what it has done. Behaviours apply to
    PRODUCTION keys only: the sandbox cascade always accepts."""
    from payorch_cli.options import Globals

    # Options written here (`payorch providers --json set ...`) hold for the subcommand too.
    root = ctx.find_root()
    merged = resolve(ctx, base_url, api_key, as_json)
    root.obj = Globals(merged.base_url, merged.api_key, merged.json)
    if ctx.invoked_subcommand is None:
        _list(ctx, as_json)


def _show_one(options: Any, provider: dict[str, Any], note: str = "") -> None:
    def human() -> Any:
        from rich.console import Group

        from payorch_cli.render.providers import provider_table

        parts: list[Any] = [provider_table(provider)]
        if note:
            parts.append(note)
        return Group(*parts)

    emit(options, provider, human)


@app.command("show")
def show(
    ctx: typer.Context,
    provider_id: ProviderId,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """One provider: what it does now, its incidents and counts."""
    options = resolve(ctx, base_url, api_key, as_json)
    with api_errors("providers show"):
        provider = options.client().get(f"/_sim/providers/{provider_id}")
    _show_one(options, provider)


BehaviourOption = Annotated[
    Behaviour | None,
    typer.Option("--behaviour", help="What it does to every charge. " + BEHAVIOURS_HELP),
]
DeclineRate = Annotated[
    float | None,
    typer.Option(
        "--decline-rate",
        parser=_rate,
        metavar="RATE",
        help="Share of charges declined while accepting (0 to 1), drawn from the seed.",
    ),
]
DeclineReason = Annotated[
    str | None,
    typer.Option(
        "--decline-reason",
        help="The reason a decline carries: card_declined, insufficient_funds, "
        "expired_card, fraud_blocked, kyc_required, three_ds_required, three_ds_failed (a "
        "card charge fails with that 402 code), do_not_honor (the cascade moves on); for a "
        "payout provider the rejection's failureReason. `none` clears it.",
    ),
]
Seed = Annotated[
    int | None,
    typer.Option("--seed", help="Seed of its decline draws: the same charges every run."),
]
Latency = Annotated[
    float | None,
    typer.Option(
        "--latency",
        parser=_duration_or_zero,
        metavar="DURATION",
        help="How long it takes to answer (2s, 45s; 0 for none); past the platform's "
        "timeout it counts as a timeout.",
    ),
]
CallbackAfter = Annotated[
    float | None,
    typer.Option(
        "--callback-after",
        parser=_duration_or_never,
        metavar="DURATION|none",
        help="When its callback confirms a charge (30s, 10m), or `none`: it never calls "
        "back and only the 5-minute reconciliation poll settles it (0 on a payout "
        "provider: it confirms in its dispatch answer).",
    ),
]
CallbackOutcomeOption = Annotated[
    CallbackOutcome | None,
    typer.Option(
        "--callback-outcome",
        help=f"What the callback reports: {_either(OUTCOMES_BY_KIND['payin'])} from a pay-in "
        f"provider; {_either(OUTCOMES_BY_KIND['payout'])} from a payout provider (a failure "
        "after processing: payout.failed, the debit reversed).",
    ),
]
CallbackModeOption = Annotated[
    CallbackMode | None,
    typer.Option(
        "--callback-mode",
        help=f"{_either(PROVIDER_CALLBACK_MODES)}: duplicate delivers the callback twice.",
    ),
]


@app.command("set")
def set_(
    ctx: typer.Context,
    provider_id: ProviderId,
    behaviour: BehaviourOption = None,
    decline_rate: DeclineRate = None,
    decline_reason: DeclineReason = None,
    seed: Seed = None,
    latency: Latency = None,
    callback_after: CallbackAfter = None,
    callback_outcome: CallbackOutcomeOption = None,
    callback_mode: CallbackModeOption = None,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Change how a provider behaves from now on.

    Kept across restarts; `payorch providers reset` undoes it. Behaviours apply to PRODUCTION keys
    only: the sandbox cascade always accepts (outcomes come from simulate and Sandbox-Simulate)."""
    body: dict[str, Any] = {
        "behaviour": behaviour.value if behaviour is not None else None,
        "declineRate": decline_rate,
        "seed": seed,
        "latencySeconds": latency,
    }
    body = {name: value for name, value in body.items() if value is not None}
    if decline_reason is not None:
        body["declineReason"] = None if decline_reason.lower() in NONE_WORDS else decline_reason
    callback = _callback_changes(ctx, callback_after, callback_outcome, callback_mode)
    if callback:
        body["callback"] = callback
    if not body:
        _nothing_to_change()
    options = resolve(ctx, base_url, api_key, as_json)
    with api_errors("providers set"):
        provider = options.client().request("PATCH", f"/_sim/providers/{provider_id}", body)
    _show_one(options, provider, note=PRODUCTION_ONLY)


def _callback_changes(
    ctx: typer.Context,
    after: float | None,
    outcome: CallbackOutcome | None,
    mode: CallbackMode | None,
) -> dict[str, Any]:
    callback: dict[str, Any] = {}
    # `--callback-after none` parses to None, the same as no option: read what was written.
    if _given(ctx, "callback_after"):
        callback["afterSeconds"] = after
    if outcome is not None:
        callback["outcome"] = outcome.value
    if mode is not None:
        callback["mode"] = mode.value
    return callback


def _nothing_to_change() -> None:
    typer.echo(
        "payorch providers set: nothing to change; give at least one of --behaviour, "
        "--decline-rate, --decline-reason, --seed, --latency, --callback-after, "
        "--callback-outcome, --callback-mode",
        err=True,
    )
    raise typer.Exit(ExitStatus.USAGE)


def _given(ctx: typer.Context, name: str) -> bool:
    # By name: typer carries its own copy of click, whose ParameterSource is another enum.
    source = ctx.get_parameter_source(name)
    return source is not None and source.name != "DEFAULT"


IncidentBehaviour = Annotated[
    Behaviour,
    typer.Argument(metavar="BEHAVIOUR", help="What it does during the window. " + BEHAVIOURS_HELP),
]
For = Annotated[
    float,
    typer.Option(
        "--for",
        parser=_duration,
        metavar="DURATION",
        help="How long, in simulated time (90s, 10m, 2h).",
    ),
]
StartsIn = Annotated[
    float | None,
    typer.Option(
        "--in",
        parser=_duration,
        metavar="DURATION",
        help="Start this far from now (default: now).",
    ),
]


@app.command("incident")
def incident(
    ctx: typer.Context,
    provider_id: ProviderId,
    behaviour: IncidentBehaviour,
    for_: For,
    starts_in: StartsIn = None,
    decline_reason: Annotated[
        str | None,
        typer.Option("--decline-reason", help="The reason declines carry meanwhile."),
    ] = None,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Give a provider a behaviour for a window of simulated time.

    `incident prv_stp_mx outage --for 10m`. When the clock passes the window the provider is back by
    itself. Applies to PRODUCTION keys only: the sandbox cascade always accepts."""
    body: dict[str, Any] = {"behaviour": behaviour.value, "durationSeconds": for_}
    if starts_in is not None:
        body["startsInSeconds"] = starts_in
    if decline_reason is not None:
        body["declineReason"] = decline_reason
    options = resolve(ctx, base_url, api_key, as_json)
    with api_errors("providers incident"):
        created = options.client().post(f"/_sim/providers/{provider_id}/incidents", body)
    emit(options, created, lambda: _incident_text(provider_id, created))


def _incident_text(provider_id: str, created: dict[str, Any]) -> str:
    from payorch_cli.render.providers import clock_time

    when = "from now" if created.get("active") else f"from {clock_time(created.get('startsAt'))}"
    return (
        f"{provider_id}: {created.get('behaviour')} {when} until "
        f"{clock_time(created.get('endsAt'))} (simulated), incident {created.get('id')}.\n"
        f"{PRODUCTION_ONLY}"
    )


def ended_line(provider_id: str, ended: dict[str, Any]) -> str:
    """One ended incident in words: `prv_stp_mx: outage ended at 12:04:10 (simulated), incident
    inc_…` or `... cancelled (it was to start at 13:00:00)`."""
    from payorch_cli.render.providers import clock_time, ended_phrase

    what = f"{provider_id}: {ended_phrase(ended)}"
    if ended.get("ended") == "cancelled":
        what += f" (it was to start at {clock_time(ended.get('startsAt'))})"
    return f"{what} (simulated), incident {ended.get('id')}."


@app.command("end")
def end(
    ctx: typer.Context,
    provider_id: ProviderId,
    incident_id: Annotated[
        str | None,
        typer.Argument(
            metavar="INCIDENT",
            help="One incident (inc_..., as `payorch providers show ID` lists); all of the "
            "provider's when omitted.",
        ),
    ] = None,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """End a provider's incidents now, before their window is over.

    `end prv_stp_mx` ends all
    of them, `end prv_stp_mx inc_…` one. An active incident ends at the simulated clock's now, a
    scheduled one is cancelled and never starts; the provider is back to its scripted behaviour
    (`payorch providers reset` also undoes what `set` changed, for every provider). Nothing to
    end is no error. Applies to PRODUCTION keys only: the sandbox cascade always accepts."""
    options = resolve(ctx, base_url, api_key, as_json)
    path = f"/_sim/providers/{provider_id}/incidents"
    with api_errors("providers end"):
        if incident_id is None:
            answer = options.client().request("DELETE", path)
            ended = [i for i in answer.get("data") or [] if isinstance(i, dict)]
        else:
            answer = options.client().request("DELETE", f"{path}/{incident_id}")
            ended = [answer]

    def human() -> str:
        if not ended:
            return f"{provider_id}: no incident in force or scheduled; nothing to end."
        return "\n".join(ended_line(provider_id, i) for i in ended)

    emit(options, answer, human)


@app.command("reset")
def reset(
    ctx: typer.Context, base_url: BaseUrl = None, api_key: ApiKey = None, as_json: Json = False
) -> None:
    """Put every provider back as the fixtures define it.

    Behaviours, rates, seeds, callbacks and incidents (counts start again).
    """
    options = resolve(ctx, base_url, api_key, as_json)
    with api_errors("providers reset"):
        providers = options.client().post("/_sim/providers/reset")["data"]
    emit(
        options,
        {"data": providers},
        f"{len(providers)} providers back as the fixtures define them (behaviours, rates, "
        "seeds,\ncallbacks; no incidents; counts start again). `payorch providers` lists them.",
    )
