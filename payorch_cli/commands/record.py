"""`payorch record`: the request log (GET /_sim/requests) written as a runnable scenario; the
transformation itself is payorch_cli/record/."""

from __future__ import annotations

import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from payorch_cli.options import (
    ApiKey,
    BaseUrl,
    ExitStatus,
    IncludeTools,
    api_errors,
    resolve,
)

if TYPE_CHECKING:
    from payorch_cli.client import Client
    from payorch_cli.record import Recording


def record(
    ctx: typer.Context,
    output: Annotated[
        str, typer.Option("-o", "--output", help="The scenario file to write ('-': stdout).")
    ] = "-",
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            help="Only requests since this time: ISO 8601 (2026-05-01T10:00:00Z) or a duration "
            "ago (10m, 2h).",
        ),
    ] = None,
    last: Annotated[
        int | None,
        typer.Option("--last", min=1, help="Only the last N requests that become steps."),
    ] = None,
    name: Annotated[str, typer.Option("--name", help="The scenario's name.")] = "recorded session",
    include_tools: IncludeTools = False,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
) -> None:
    """Write the logged requests as a scenario file.

    Each call a step, ids saved and reused,
    the status and stable fields expected, clock advances and delivered events kept. By default
    everything since the server started or was last reset."""
    if since is not None and last is not None:
        _fail("--since and --last cannot be used together", ExitStatus.USAGE)
    cutoff = _cutoff(since) if since is not None else None
    if output != "-":
        _check_output(Path(output))
    client = resolve(ctx, base_url, api_key).client()
    recording, requests = _recording(client, cutoff, since, last, include_tools, name)
    _write_scenario(output, recording)
    _summarise(recording, requests, output)


def _recording(
    client: Client,
    cutoff: datetime | None,
    since: str | None,
    last: int | None,
    include_tools: bool,
    name: str,
) -> tuple[Recording, int]:
    """The scenario of the log's requests in range, and how many requests that range held."""
    from payorch_cli.record import delivered_events, identity_of, log_detail, log_summaries
    from payorch_cli.record import record as build

    with api_errors("record"):
        summaries, outside = log_summaries(client, cutoff, last, include_tools)
        if not summaries:
            _fail(_empty_reason(client, since, last), ExitStatus.ERROR)
        details = [log_detail(client, summary) for summary in summaries]
        events = delivered_events(client)
    return build(details, events, identity_of(client.api_key), name, outside), len(details)


def _write_scenario(output: str, recording: Recording) -> None:
    from payorch_cli.record import to_yaml

    text = to_yaml(recording.document, recording.comments)
    if output == "-":
        sys.stdout.write(text)
    else:
        _write(Path(output), text)


def _summarise(recording: Recording, requests: int, output: str) -> None:
    """What was recorded, on stderr; the requests left out apart, each with why, so the count
    is only of what the file replays."""
    steps = recording.document["steps"]
    expects = sum(1 for step in steps if "expect_event" in step)
    where = "" if output == "-" else f" to {output}"
    recorded = requests - len(recording.skipped)
    counts = (
        f"{_count(recorded, 'request')} as {_count(len(steps), 'step')} "
        f"({_count(expects, 'expected event')}){where}"
    )
    if recording.unexpressed:
        counts += f"; {len(recording.unexpressed)} not expressible as a step (comments in the file)"
    if recording.unlinked:
        counts += (
            f"; {_count(len(recording.unlinked), 'id')} not created in the recording "
            "(vars flagged UNLINKED in the file)"
        )
    sys.stderr.write(f"Recorded {counts}.\n")
    if recording.skipped:
        sys.stderr.write(_left_out(recording.skipped))
    # Once per distinct note: a masked field of many requests is named once, with their count.
    for note, times in Counter(recording.notes).items():
        sys.stderr.write(f"Note: {note}" + (f" ({times} requests)" if times > 1 else "") + ".\n")


def _left_out(skipped: list[str]) -> str:
    from payorch_cli.record import left_out_because

    reasons = []
    for request in skipped:
        method, _, path = request.partition(" ")
        reasons.append(f"{request} ({left_out_because(method, path)})")
    return (
        f"Left out {_count(len(skipped), 'request')} a replay must not repeat: "
        + "; ".join(reasons)
        + ".\n"
    )


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _fail(message: str, status: ExitStatus) -> None:
    sys.stderr.write(f"payorch record: {message}\n")
    raise typer.Exit(status)


def _cutoff(since: str) -> datetime:
    """--since as an aware datetime: an ISO time, or now minus a duration."""
    from payorch_cli.durations import DurationError, parse_duration

    try:
        moment = datetime.fromisoformat(since.replace("Z", "+00:00"))
    except ValueError:
        try:
            seconds = parse_duration(since)
        except DurationError:
            _fail(
                f"--since {since!r} is neither an ISO time (2026-05-01T10:00:00Z) nor a "
                "duration ago (10m, 2h)",
                ExitStatus.USAGE,
            )
            raise
        try:
            return datetime.now(UTC) - timedelta(seconds=seconds)
        except OverflowError:  # further back than the calendar: every request of the log
            return datetime.min.replace(tzinfo=UTC)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _check_output(path: Path) -> None:
    """Refuse an output the file cannot be written to before asking the server anything."""
    if path.is_dir():
        _fail(
            f"-o {path}: is a directory; name a file in it (-o {path}/journey.yaml)",
            ExitStatus.USAGE,
        )
    if not path.parent.is_dir():
        _fail(f"-o {path}: no such directory {path.parent}", ExitStatus.USAGE)


def _write(path: Path, text: str) -> None:
    """The file whole or not at all: a regular file through a temporary one renamed over it; a
    device (/dev/stdout, /dev/full) written directly. A failure is one line, exit 1."""
    import os
    import tempfile

    try:
        if path.exists() and not path.is_file():
            with path.open("w", encoding="utf-8") as file:
                file.write(text)
            return
        fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                file.write(text)
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError as exc:
        _fail(f"cannot write {path}: {exc.strerror or exc}", ExitStatus.ERROR)


def _empty_reason(client: Client, since: str | None, last: int | None) -> str:
    from payorch_cli.client import ApiError

    try:
        client.get("/_sim/requests/req_000000000000000000000000")
    except ApiError as exc:
        if "is off" in str(exc.message):
            return (
                f"the request log of {client.base_url} is off (served with --request-log 0): "
                "there is nothing to record"
            )
    when = f" since {since}" if since else ""
    return (
        f"the request log of {client.base_url} holds no request{when} of this credential's "
        "merchant: make the calls to record first (the log starts empty at start and reset)"
    )
