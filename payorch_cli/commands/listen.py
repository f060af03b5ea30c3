"""`payorch listen`: subscribe, print each delivery live, remove the subscription on Ctrl-C.

Without `--forward-to` it hosts a tiny local endpoint that verifies every signature with
`payorch.webhooks.verify` (so a bad signature shows up in the output); with it, the server
delivers straight to the given URL. Either way each printed line is the server's own record of
an attempt (time, event, delivery id, HTTP status, latency), read from the delivery list.
"""

from __future__ import annotations

import signal
import sys
import time
from datetime import datetime
from typing import Annotated, Any

import typer

from payorch.vocabulary import EVENT_TYPES
from payorch_cli.options import ApiKey, BaseUrl, api_errors, did_you_mean, resolve

CLEANUP_TIMEOUT_SECONDS = 5.0


def parse_events(value: str) -> list[str] | str:
    """`--events`: comma-separated event types, or `*` alone for all. An unknown name is a
    usage error naming the closest type, before anything is sent."""
    names = [name.strip() for name in value.split(",") if name.strip()]
    if names in ([], ["*"]):
        return "*"
    for name in names:
        if name == "*":
            raise typer.BadParameter(
                "`*` means every event: give it alone", param_hint="'--events'"
            )
        if name not in EVENT_TYPES:
            raise typer.BadParameter(
                f"unknown event {name!r}{did_you_mean(name, EVENT_TYPES)}; one of: "
                + ", ".join(EVENT_TYPES),
                param_hint="'--events'",
            )
    return names


def attempt_line(delivery: dict[str, Any], attempt: dict[str, Any], verdict: str | None) -> str:
    stamp = attempt.get("sentAt") or attempt["at"]
    when = datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone().strftime("%H:%M:%S")
    status = "stored" if attempt.get("stored") else str(attempt.get("httpStatus") or "ERR")
    latency = attempt.get("durationMs")
    notes = []
    if attempt["trigger"] != "initial":
        notes.append(attempt["trigger"])
    if attempt.get("error"):
        notes.append(attempt["error"])
    if verdict not in (None, "ok"):
        notes.append(f"bad signature: {verdict}")
    return (
        f"{when}  {delivery['eventType']:<22} {delivery['id']}  {status:>6}  "
        f"{'' if latency is None else f'{latency:.0f} ms':>8}  {' · '.join(notes)}"
    ).rstrip()


def _stop_on_signals() -> None:
    """Ctrl-C and SIGTERM both end the loop (and remove the subscription).

    SIGINT is installed explicitly, not inherited: a shell starts background jobs with SIGINT
    ignored (`payorch listen &` in a script, a CI runner's job), and an ignored Ctrl-C would leave
    a listener nothing but SIGKILL stops, with its subscription left behind on the server.
    """

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, signal.default_int_handler)


def listen(
    ctx: typer.Context,
    forward_to: Annotated[
        str | None,
        typer.Option(
            "--forward-to",
            help="Deliver to this URL (e.g. http://localhost:3000/hooks) instead of a local "
            "receiver that verifies signatures.",
        ),
    ] = None,
    events: Annotated[
        str, typer.Option("--events", help="Comma-separated event names; * for all.")
    ] = "*",
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    poll: Annotated[
        float, typer.Option("--poll", help="Seconds between checks.", hidden=True)
    ] = 0.25,
) -> None:
    """Subscribe to events and print each delivery live; Ctrl-C removes the subscription."""
    from payorch_cli.client import ApiError
    from payorch_cli.local_receiver import LocalReceiver

    wanted = parse_events(events)  # a bad name is refused before anything starts
    client = resolve(ctx, base_url, api_key).client("listen", tag_writes=True)
    receiver = None if forward_to else LocalReceiver()
    if receiver is not None:
        receiver.start()
    target = forward_to or (receiver.url if receiver else None)
    try:
        with api_errors("listen"):
            sub = client.create_webhook(target, wanted, "payorch listen")
    except typer.Exit:
        if receiver is not None:
            receiver.stop()
        raise
    if receiver is not None:
        receiver.arm(sub["secret"])
    kinds = "all events" if sub["events"] == ["*"] else ", ".join(sub["events"])
    how = "local receiver, verifying signatures" if receiver else "forwarding"
    # Armed before "Ready." is printed: a caller that signals as soon as it reads it must not
    # find SIGINT still ignored, and the clean-up below covers every line printed.
    _stop_on_signals()
    code = 0
    printed: dict[str, int] = {}
    try:
        typer.echo(f"Subscription {sub['id']} -> {sub['url']} ({how})")
        typer.echo(f"Events: {kinds}")
        typer.echo(f"Signing secret: {sub['secret']}")
        typer.echo("Ready. Ctrl-C to stop and remove the subscription.")
        sys.stdout.flush()
        while True:
            for delivery in reversed(client.webhook_deliveries(sub["id"])):
                attempts = delivery["attempts"]
                for attempt in attempts[printed.get(delivery["id"], 0) :]:
                    verdict = receiver.verdicts.get(delivery["id"]) if receiver else None
                    typer.echo(attempt_line(delivery, attempt, verdict))
                printed[delivery["id"]] = len(attempts)
            sys.stdout.flush()
            time.sleep(poll)
    except KeyboardInterrupt:
        pass
    except ApiError as exc:
        typer.echo(f"payorch listen: {exc.message}", err=True)
        code = 1
    finally:
        # Ctrl-C can land mid-exchange and leave the kept-alive connection half-used: the
        # clean-up starts on a fresh one, and gives up rather than hang if the server is gone.
        client.timeout = CLEANUP_TIMEOUT_SECONDS
        client.close()
        try:
            client.delete_webhook(sub["id"])
            typer.echo(f"Removed subscription {sub['id']}.")
        except ApiError as exc:
            typer.echo(f"payorch listen: could not remove {sub['id']}: {exc.message}", err=True)
            code = 1
        if receiver is not None:
            receiver.stop()
    raise typer.Exit(code)
