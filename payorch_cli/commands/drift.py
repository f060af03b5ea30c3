"""`payorch drift RECORDING`: replay a recording against payorch and report the differences
(design.md 1.9); the replay is payorch_cli/drift/, the report payorch_cli/render/drift.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from payorch_cli.options import ApiKey, BaseUrl, ExitStatus, Json, resolve

if TYPE_CHECKING:
    from payorch_cli.drift.replay import Outcome
    from payorch_cli.recording.reader import Recording


def _fail(line: str, status: ExitStatus) -> typer.Exit:
    sys.stderr.write(f"payorch drift: {line}\n")
    return typer.Exit(status)


def _extract(recording: Recording, seq: int) -> None:
    """Print the header and record `seq`: a one-exchange recording to attach to an issue
    (already redacted, and itself replayable by `payorch drift`)."""
    for record in recording.records():
        if record.get("seq") == seq:
            sys.stdout.write(json.dumps(recording.header) + "\n" + json.dumps(record) + "\n")
            return
    raise _fail(f"{recording.path}: no record #{seq}", ExitStatus.USAGE)


def _replay(recording: Recording, base_url: str | None, api_key: str | None) -> Outcome:
    from payorch_cli.client import DEFAULT_API_KEY
    from payorch_cli.drift.deliveries import EndpointAnswers
    from payorch_cli.drift.replay import Replay, Target

    # The look-ahead pass first: what the user's endpoint answered, from the reads after it.
    answers = EndpointAnswers.read(recording.lines())

    simulator = None
    if base_url is None:
        from payorch_cli.scenario.host import host

        simulator = host().start()
        base_url = simulator.base_url
    target = Target(base_url, api_key or DEFAULT_API_KEY, own=simulator is not None)
    try:
        target.create()
        try:
            upstream = str(recording.header.get("upstream"))
            replay = Replay(target, upstream, answers)
            return replay.run(recording.records(), lambda seq: None)
        finally:
            target.delete()
    finally:
        target.close()
        if simulator is not None:
            simulator.stop()


def drift(
    ctx: typer.Context,
    recording_path: Annotated[
        Path,
        typer.Argument(
            help="A recording of `payorch proxy` (its exchanges.jsonl, or its --out directory).",
            metavar="RECORDING",
        ),
    ],
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
    min_parity: Annotated[
        float,
        typer.Option(
            "--min-parity",
            min=0.0,
            max=1.0,
            help="Exit 1 when the share of records that match is below this.",
        ),
    ] = 1.0,
    html_file: Annotated[
        Path | None,
        typer.Option("--html", help="Also write the report as one HTML file.", metavar="FILE"),
    ] = None,
    exchange: Annotated[
        int | None,
        typer.Option(
            "--exchange",
            min=1,
            metavar="SEQ",
            help="Only print record SEQ of the recording (redacted, to attach to an issue).",
        ),
    ] = None,
) -> None:
    """Replay a recording on payorch; list the differences.

    Each answer of payorch is compared with the upstream's answer in the recording. Without
    --base-url the replay runs on an embedded payorch; with it, on that server, in a fresh
    namespace deleted afterwards. Exit 0 at or above --min-parity, 1 below, 2 for a bad
    recording or usage, 3 when the server cannot be reached."""
    options = resolve(ctx, base_url, api_key, as_json)
    outcome = _outcome(recording_path, options.base_url, options.api_key, exchange)
    if outcome is not None:
        _report(outcome, str(recording_path), min_parity, html_file, as_json=options.json)


def _outcome(
    recording_path: Path, base_url: str | None, api_key: str | None, exchange: int | None
) -> Outcome | None:
    """The replay's outcome (None when only record `exchange` was printed); a bad recording,
    a refused replay and an unreachable server end the command with their exit status."""
    from payorch_cli.recording.reader import RecordingError, open_recording

    try:
        with open_recording(recording_path) as recording:
            if exchange is not None:
                _extract(recording, exchange)
                return None
            return _replay(recording, base_url, api_key)
    except RecordingError as exc:
        raise _fail(str(exc), ExitStatus.USAGE) from None
    except RuntimeError as exc:
        raise _fail(str(exc), ExitStatus.ERROR) from None
    except OSError as exc:
        raise _fail(f"cannot reach {base_url}: {exc}", ExitStatus.UNREACHABLE) from None


def _report(
    outcome: Outcome, recording: str, min_parity: float, html_file: Path | None, *, as_json: bool
) -> None:
    """Print the report (and write its HTML page); exit 1 below --min-parity."""
    from payorch_cli.render.drift import document, html_page, text_lines

    doc = document(outcome, recording, min_parity)
    if html_file is not None:
        html_file.write_text(html_page(doc), encoding="utf-8")
    if as_json:
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        sys.stdout.write("\n".join(text_lines(doc)) + "\n")
    if not doc["passed"]:
        raise typer.Exit(ExitStatus.ERROR)
