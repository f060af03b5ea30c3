"""`payorch listen`: subscribe, print each delivery live, pause the subscription on Ctrl-C.

Without `--forward-to` it hosts a tiny local endpoint that verifies every signature with
`payorch.webhooks.verify` (so a bad signature shows up in the output); with it, the server
delivers straight to the given URL. Either way each printed line is the server's own record of
an attempt (time, event, delivery id, HTTP status, latency), read from the delivery list; with
`--json`, that record as one JSON object per line.

The signing secret is stable: the subscription is kept between runs (paused while no listen
runs: an inactive subscription records no deliveries) and reused, through `listen_state`, for
the same server, key and target. The server returns a secret only when it creates one.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import quote

import typer

from payorch.vocabulary import EVENT_TYPES
from payorch_cli.options import ApiKey, BaseUrl, Json, api_errors, did_you_mean, resolve
from payorch_cli.render.layout import terminal_width

if TYPE_CHECKING:
    from payorch_cli.client import Client
    from payorch_cli.listen_state import ListenState
    from payorch_cli.local_receiver import LocalReceiver

CLEANUP_TIMEOUT_SECONDS = 5.0
DESCRIPTION = "payorch listen"
# Where a subscription made only to print its secret points until a listen run takes it over
# (the discard port: nothing answers, and it is paused at once).
PLACEHOLDER_URL = "http://127.0.0.1:9/webhooks"


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


def attempt_line(
    delivery: dict[str, Any], attempt: dict[str, Any], verdict: str | None, width: int = 80
) -> str:
    """`time  event  delivery  status  latency`, then why (retry, error, bad signature) on the
    same line when it fits in `width`, else under it, wrapped at words."""
    import textwrap

    stamp = attempt.get("sentAt") or attempt["at"]
    when = datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone().strftime("%H:%M:%S")
    status = "stored" if attempt.get("stored") else str(attempt.get("httpStatus") or "ERR")
    latency = attempt.get("durationMs")
    head = (
        f"{when}  {delivery['eventType']:<20}  {delivery['id']}  {status:>6}  "
        f"{'' if latency is None else f'{latency:.0f} ms':>7}"
    ).rstrip()
    notes = " · ".join(_attempt_notes(attempt, verdict))
    if not notes or len(head) + 2 + len(notes) <= width:
        return f"{head}  {notes}".rstrip()
    indent = " " * 10  # under the event type
    return "\n".join(
        [
            head,
            *textwrap.wrap(
                notes,
                max(width, 40),  # a sliver of a terminal still gets whole words
                initial_indent=indent,
                subsequent_indent=indent,
                break_long_words=False,
            ),
        ]
    )


def _attempt_notes(attempt: dict[str, Any], verdict: str | None) -> list[str]:
    notes = []
    if attempt["trigger"] != "initial":
        notes.append(attempt["trigger"])
    if attempt.get("error"):
        notes.append(attempt["error"])
    if verdict not in (None, "ok"):
        notes.append(f"bad signature: {verdict}")
    return notes


def _stop_on_signals() -> None:
    """Ctrl-C and SIGTERM both end the loop (and pause the subscription).

    SIGINT is installed explicitly, not inherited: a shell starts background jobs with SIGINT
    ignored (`payorch listen &` in a script, a CI runner's job), and an ignored Ctrl-C would leave
    a listener nothing but SIGKILL stops, with its subscription left behind on the server.
    """

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, signal.default_int_handler)


def attempt_record(
    delivery: dict[str, Any], attempt: dict[str, Any], verdict: str | None
) -> dict[str, Any]:
    """One attempt as `--json` prints it: the delivery's ids, the attempt as the server recorded
    it, the local receiver's signature check (`ok`, a reason, or null when forwarding) and the
    event that was delivered."""
    return {
        "deliveryId": delivery["id"],
        "webhookId": delivery.get("webhookId"),
        "eventId": delivery.get("eventId"),
        "eventType": delivery["eventType"],
        "attempt": attempt,
        "signature": verdict,
        "event": delivery.get("event"),
    }


def acquire(
    client: Client,
    state: ListenState,
    key: str,
    target: str | None,
    events: list[str] | str,
    *,
    active: bool,
) -> tuple[dict[str, Any], str, bool]:
    """The subscription to listen on, its secret, and whether it was reused: the saved one for
    this server, key and target, or a new one, saved. `active` resumes a saved one with these
    events and target; without it (`--print-secret`) a saved one is only looked up, so a listen
    running meanwhile goes on, and a new one is made paused."""
    from payorch_cli.client import ApiError

    saved = state.get(key)
    if saved is not None:
        changes: dict[str, Any] = {"events": events, "active": True, "url": target}
        try:
            if active:
                sub = client.update_webhook(saved["webhookId"], changes)
            else:
                sub = client.get(f"/webhooks/{quote(saved['webhookId'], safe='')}")
        except ApiError as exc:
            if exc.code != "webhook_not_found":
                raise
            sub = None  # the server was reset, or is another one: a new subscription
        if sub is not None and sub.get("description") == DESCRIPTION:
            return sub, saved["secret"], True
    sub = client.create_webhook(target or PLACEHOLDER_URL, events, DESCRIPTION)
    secret = sub["secret"]
    if saved is not None:
        # Made anew (a reset): give it the secret the user's receiver already has, so a
        # receiver started with --print-secret keeps verifying (the control plane's call).
        try:
            path = f"/_sim/webhooks/{quote(sub['id'], safe='')}/secret"
            sub = client.post(path, {"secret": saved["secret"]})
            secret = saved["secret"]
        except ApiError:
            pass  # a production key, or a server without the call: the new secret, said
    try:
        state.put(key, sub["id"], secret)
    except OSError as exc:
        sys.stderr.write(
            f"payorch listen: cannot keep the secret in {state.path} ({exc.strerror or exc}): "
            "the next run gets a new one\n"
        )
    if not active:
        sub = client.update_webhook(sub["id"], {"active": False})
    return sub, secret, saved is not None and secret == saved["secret"]


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
    print_secret: Annotated[
        bool,
        typer.Option(
            "--print-secret",
            help="Print the signing secret for this target (the same on every run) and exit.",
        ),
    ] = False,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
    poll: Annotated[
        float, typer.Option("--poll", help="Seconds between checks.", hidden=True)
    ] = 0.25,
) -> None:
    """Subscribe to events and print each delivery live.

    Ctrl-C pauses the subscription; the next run for the same server, key and target resumes
    it, with the same signing secret. --json prints one delivery attempt per line.
    """
    from payorch_cli.listen_state import ListenState, entry_key

    wanted = parse_events(events)  # a bad name is refused before anything starts
    options = resolve(ctx, base_url, api_key, as_json)
    client = options.client("listen", tag_writes=True)
    state = ListenState()
    key = entry_key(client.base_url, client.api_key, forward_to)
    if print_secret:
        _print_secret(client, state, key, forward_to, wanted, as_json=options.json)
    session = _subscribe(client, state, key, forward_to, wanted, as_json=options.json)
    # Armed before "Ready." is printed: a caller that signals as soon as it reads it must not
    # find SIGINT still ignored, and the clean-up below covers every line printed.
    _stop_on_signals()
    raise typer.Exit(session.run(poll))


def _print_secret(
    client: Client,
    state: ListenState,
    key: str,
    forward_to: str | None,
    wanted: list[str] | str,
    *,
    as_json: bool,
) -> None:
    import json

    with api_errors("listen"):
        sub, secret, _ = acquire(client, state, key, forward_to, wanted, active=False)
    if as_json:
        typer.echo(json.dumps({"webhookId": sub["id"], "secret": secret}))
    else:
        typer.echo(secret)
    raise typer.Exit(0)


def _subscribe(
    client: Client,
    state: ListenState,
    key: str,
    forward_to: str | None,
    wanted: list[str] | str,
    *,
    as_json: bool,
) -> Session:
    """The local receiver (unless forwarding) and the subscription pointed at it; a refusal
    stops the receiver and exits with the API's line."""
    from payorch_cli.local_receiver import LocalReceiver

    receiver = None if forward_to else LocalReceiver()
    if receiver is not None:
        receiver.start()
    target = forward_to or (receiver.url if receiver else None)
    try:
        with api_errors("listen"):
            sub, secret, reused = acquire(client, state, key, target, wanted, active=True)
            # A reused subscription keeps its past deliveries: only new attempts are printed.
            printed = {d["id"]: len(d["attempts"]) for d in client.webhook_deliveries(sub["id"])}
    except typer.Exit:
        if receiver is not None:
            receiver.stop()
        raise
    if receiver is not None:
        receiver.arm(secret)
    session = Session(client, state, key, target, wanted, receiver, sub, secret, as_json)
    session.printed, session.reused = printed, reused
    return session


@dataclass
class Session:
    """One listen run: the subscription, its secret, and the attempts already printed."""

    client: Client
    state: ListenState
    key: str
    target: str | None
    wanted: list[str] | str
    receiver: LocalReceiver | None
    sub: dict[str, Any]
    secret: str
    as_json: bool
    reused: bool = False
    printed: dict[str, int] = field(default_factory=dict)

    def say(self, text: str) -> None:
        # Under --json, stdout carries only the deliveries: the rest goes to stderr.
        typer.echo(text, err=self.as_json)

    def say_fitting(self, head: str, note: str) -> None:
        """`head (note)`, or the note on the next line where the terminal is too narrow for
        both: the head holds a value to copy (a URL, the secret), never folded."""
        if len(head) + len(note) + 3 <= terminal_width():
            self.say(f"{head} ({note})")
        else:
            self.say(head)
            self.say(f"  ({note})")

    def run(self, poll: float) -> int:
        """Print attempts until Ctrl-C, then pause the subscription; the exit status."""
        from payorch_cli.client import ApiError

        code = 0
        try:
            self.announce()
            while True:
                self.print_new_attempts()
                time.sleep(poll)
        except KeyboardInterrupt:
            pass
        except ApiError as exc:
            typer.echo(f"payorch listen: {exc.message}", err=True)
            code = 1
        finally:
            code = self.pause() or code
        return code

    def announce(self) -> None:
        kinds = "all events" if self.sub["events"] == ["*"] else ", ".join(self.sub["events"])
        how = "local receiver, verifying signatures" if self.receiver else "forwarding"
        kept = "the same as the last run" if self.reused else "new; kept for the next runs"
        self.say_fitting(f"Subscription {self.sub['id']} -> {self.sub['url']}", how)
        self.say(f"Events: {kinds}")
        self.say_fitting(f"Signing secret: {self.secret}", kept)
        self.say("Ready. Ctrl-C to stop (the subscription is paused, not removed).")
        sys.stdout.flush()

    def print_new_attempts(self) -> None:
        from payorch_cli.client import ApiError

        try:
            deliveries = self.client.webhook_deliveries(self.sub["id"])
        except ApiError as exc:
            if exc.code != "webhook_not_found":
                raise
            self.resubscribe()
            return
        width = terminal_width()
        for delivery in reversed(deliveries):
            attempts = delivery["attempts"]
            for attempt in attempts[self.printed.get(delivery["id"], 0) :]:
                verdict = self.receiver.verdicts.get(delivery["id"]) if self.receiver else None
                if self.as_json:
                    record = attempt_record(delivery, attempt, verdict)
                    typer.echo(json.dumps(record, ensure_ascii=False))
                else:
                    typer.echo(attempt_line(delivery, attempt, verdict, width))
            self.printed[delivery["id"]] = len(attempts)
        sys.stdout.flush()

    def resubscribe(self) -> None:
        """The server was reset under us: go on with a new subscription, with the same secret
        where the server lets it be set, and say which."""
        self.sub, self.secret, same = acquire(
            self.client, self.state, self.key, self.target, self.wanted, active=True
        )
        if self.receiver is not None:
            self.receiver.arm(self.secret)
        self.printed = {}
        self.say(f"The server no longer has the subscription (reset?): now {self.sub['id']}")
        if same:
            self.say("Signing secret: unchanged (your endpoint keeps verifying)")
        else:
            self.say(f"Signing secret: {self.secret} (new: give it to your endpoint)")
        sys.stdout.flush()

    def pause(self) -> int:
        """Pause the subscription and stop the receiver; 1 when the pause failed."""
        from payorch_cli.client import ApiError

        # Ctrl-C can land mid-exchange and leave the kept-alive connection half-used: the
        # clean-up starts on a fresh one, and gives up rather than hang if the server is gone.
        self.client.timeout = CLEANUP_TIMEOUT_SECONDS
        self.client.close()
        code = 0
        try:
            self.client.update_webhook(self.sub["id"], {"active": False})
            self.say(f"Paused subscription {self.sub['id']} (the next listen resumes it).")
        except ApiError as exc:
            typer.echo(f"payorch listen: could not pause {self.sub['id']}: {exc.message}", err=True)
            code = 1
        if self.receiver is not None:
            self.receiver.stop()
        return code
