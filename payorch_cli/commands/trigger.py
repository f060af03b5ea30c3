"""`payorch trigger EVENT`: make the service fire one event of the spec, from nothing.

It creates the objects the event needs (a payment, a payout...) and drives them with the sandbox
tools — simulate, refunds, withdrawals, the clock — until the event fires, then prints the
objects and the event. The event is observed through a managed-inbox subscription made for the
run (its deliveries are recorded in the same transaction as the state change, so there is no
race) and deleted afterwards; your own subscriptions receive the event as usual, which is the
point (`payorch listen` in another shell shows it).

Some events need simulated time to pass (settlements close at 00:00 UTC after T+N, chargeback
claims resolve after 7 days, a withdrawal settles a minute later and needs available money). The
clock is the server's, shared by every client of it, so trigger moves it only when told to
(`--advance-clock`): then one day at a time until the event shows, and the output says how far it
moved; without it such an event is refused before anything is created (exit 2, naming the option).

The event shown is the one about what this run created (its payment, claim, withdrawal, payout;
for `settlement.*` the settlement listing its payment), not an older one of the same type.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

import typer

from payorch.vocabulary import EVENT_TYPES
from payorch_cli import completion
from payorch_cli.options import (
    ApiKey,
    BaseUrl,
    ExitStatus,
    Json,
    api_errors,
    did_you_mean,
    emit,
    positive_seconds,
    resolve,
)

if TYPE_CHECKING:
    from payorch_cli.client import Client

DAY = 86_400
# A valid synthetic SPEI recipient (CLABE and RFC with their check digits).
SPEI_RECIPIENT = {
    "name": "Ana López",
    "account": "012180001183597198",
    "documentType": "RFC",
    "documentId": "IXLZ9511197B1",
}


class TriggerFailed(Exception):
    pass


# The recipes that move the clock; the others must fire without it (a test runs every one
# without --advance-clock when it is not listed here, and `advance` refuses to move otherwise).
NEEDS_CLOCK: dict[str, str] = {
    "claim.resolved": "a chargeback's claim resolves after 7 simulated days",
    "settlement.closed": "settlements close at 00:00 UTC after the payment's T+N",
    "settlement.pdf_ready": "settlements close at 00:00 UTC after the payment's T+N",
    "withdrawal.completed": "a withdrawal settles a simulated minute later, from available money",
    "withdrawal.failed": "a withdrawal settles a simulated minute later, from available money",
}


@dataclass
class Trigger:
    client: Client
    event: str
    method: str
    timeout: float
    objects: dict[str, Any] = field(default_factory=dict)
    advanced: float = 0.0
    inbox: str = ""
    may_advance: bool = True
    inbox_client: Client | None = None  # the inbox's polls (the tool's own); else `client`

    # -- observation -------------------------------------------------------------------------

    def created_ids(self) -> set[str]:
        return {
            str(obj["id"] if "id" in obj else obj.get("transactionId"))
            for obj in self.objects.values()
            if isinstance(obj, dict) and ("id" in obj or "transactionId" in obj)
        }

    def about_ours(self, envelope: dict[str, Any]) -> bool:
        """Whether an event is about what this run created: its data is one of our objects
        (`id`), refers to one (`transactionId`), or lists one (a settlement's
        `transactionIds`). Another client's event of the same type, or an older settlement
        closing on the way, is not ours."""
        data = envelope.get("data")
        if not isinstance(data, dict):
            return False
        ours = self.created_ids()
        mentioned = {str(data.get("id")), str(data.get("transactionId"))}
        listed = data.get("transactionIds")
        if isinstance(listed, list):
            mentioned.update(str(tx_id) for tx_id in listed)
        return bool(ours & mentioned)

    def seen(self) -> dict[str, Any] | None:
        reader = self.inbox_client or self.client
        rows = reader.get(f"/webhooks/{self.inbox}/deliveries", limit=100)["data"]
        for row in reversed(rows):  # oldest first
            if row["eventType"] == self.event and self.about_ours(row["event"]):
                return dict(row["event"])
        return None

    def wait(self) -> dict[str, Any] | None:
        deadline = time.monotonic() + self.timeout
        while True:
            found = self.seen()
            if found or time.monotonic() >= deadline:
                return found
            time.sleep(0.1)

    def advance(self, seconds: float) -> None:
        if not self.may_advance:
            raise TriggerFailed(f"{self.event} needs the clock moved: add --advance-clock")
        self.client.post("/_sim/clock/advance", {"seconds": seconds})
        self.advanced += seconds

    def advance_until(self, done: Any, step: float, limit: float) -> None:
        """Move the clock `step` at a time until `done()` is truthy (at most `limit`)."""
        while not done():
            if self.advanced >= limit:
                raise TriggerFailed(
                    f"{self.event} did not fire within {limit / DAY:g} simulated days"
                )
            self.advance(step)

    # -- building blocks ---------------------------------------------------------------------

    def pay(self, action: str | None = "paid", amount: float = 100) -> str:
        tx = self.client.post("/payments", {"amount": amount, "paymentMethodId": self.method})
        tx_id = tx["transactionId"]
        if action:
            self.client.post(f"/payments/{tx_id}/simulate", {"action": action})
        self.objects["payment"] = self.client.get(f"/payments/{tx_id}")
        return tx_id

    def simulate(self, tx_id: str, action: str) -> None:
        self.objects["simulate"] = self.client.post(
            f"/payments/{tx_id}/simulate", {"action": action}
        )
        self.objects["payment"] = self.client.get(f"/payments/{tx_id}")

    def available(self) -> float:
        return float(self.client.get("/me/balance")["balance"]["available"])

    # -- recipes -----------------------------------------------------------------------------

    def run(self) -> None:
        recipe = RECIPES.get(self.event)
        if recipe is None:
            raise TriggerFailed(f"payorch trigger has no recipe for {self.event} yet.")
        recipe(self)

    def refund(self) -> None:
        self.simulate(self.pay("paid"), "refunded")

    def chargeback(self, *, until_resolved: bool) -> None:
        self.simulate(self.pay("paid"), "chargeback")
        if until_resolved:
            self.advance_until(self.seen, DAY, 10 * DAY)  # chargebacks resolve in 7 days

    def settle(self) -> None:
        self.pay("paid")
        self.advance_until(self.seen, DAY, 10 * DAY)  # T+N, then the next 00:00 UTC

    def withdraw(self, outcome: str | None) -> None:
        fee = float(self.client.get("/me/balance").get("withdrawalFeeUsd") or 0)
        if self.available() < fee + 1:
            self.pay("paid")  # money to withdraw: settles after the merchant's T+N
            self.advance_until(lambda: self.available() >= fee + 1, DAY, 10 * DAY)
        body: dict[str, Any] = {"amount": 1}
        if outcome:
            body["outcome"] = outcome
        self.objects["withdrawal"] = self.client.post("/_sim/withdrawals", body)["withdrawal"]
        self.advance(60)  # withdrawals settle 60 simulated seconds later
        wid = self.objects["withdrawal"]["id"]
        self.objects["withdrawal"] = self.client.get(f"/_sim/withdrawals/{wid}")["withdrawal"]

    def payout(self, action: str) -> None:
        sent = self.client.post(
            "/me/payout/send",
            {"methodId": "sbx_po_mx_spei", "amount": 100, "recipient": SPEI_RECIPIENT},
        )
        payout_id = sent["payout"]["id"]
        self.objects["payout"] = self.client.post(
            f"/me/payout/send/{payout_id}/simulate", {"action": action}
        )["payout"]


# What it takes to make each event fire; a test holds it to the vocabulary's event types.
RECIPES: dict[str, Callable[[Trigger], object]] = {
    "payment.completed": lambda run: run.pay("paid"),
    "payment.captured": lambda run: run.pay("paid"),
    "payment.failed": lambda run: run.pay("failed"),
    "payment.refunded": Trigger.refund,
    "chargeback.created": lambda run: run.chargeback(until_resolved=False),
    "claim.opened": lambda run: run.chargeback(until_resolved=False),
    "claim.resolved": lambda run: run.chargeback(until_resolved=True),
    "settlement.closed": Trigger.settle,
    "settlement.pdf_ready": Trigger.settle,
    "withdrawal.completed": lambda run: run.withdraw(None),
    "withdrawal.failed": lambda run: run.withdraw("failed"),
    "payout.completed": lambda run: run.payout("completed"),
    "payout.failed": lambda run: run.payout("failed"),
}


def _human(trigger: Trigger, event: dict[str, Any]) -> Any:
    """The event and one line per object it took (id, status, money): the objects and the event
    in full are for --json."""
    from payorch_cli.durations import format_duration
    from payorch_cli.render.layout import Detail

    rows = [("at", str(event.get("createdAt", "")))]
    for noun, ident in created(trigger.objects).items():
        obj = trigger.objects[noun]
        rows.append((noun, "  ".join(part for part in (ident, *_gist(obj)) if part)))
    if trigger.advanced:
        rows.append(("clock", f"advanced {format_duration(trigger.advanced)}"))
    title = f"event {event.get('type', '?')}  {event.get('id', '')}"
    return Detail(title, rows, "--json for the objects and the event in full")


def _gist(obj: dict[str, Any]) -> tuple[str, str]:
    amount, currency = obj.get("amount"), obj.get("currency")
    money = "" if amount is None else f"{amount} {currency or ''}".strip()
    return str(obj.get("status") or ""), money


def created(objects: dict[str, Any]) -> dict[str, str]:
    """The id of each object the run made or caused, by noun (`simulate` is an answer, not an
    object)."""
    found: dict[str, str] = {}
    for noun, obj in objects.items():
        if noun != "simulate" and isinstance(obj, dict):
            ident = obj.get("id") or obj.get("transactionId")
            if ident:
                found[noun] = str(ident)
    return found


def _include_event_object(run: Trigger, envelope: dict[str, Any]) -> None:
    """A settlement or claim exists only in its event: shown with the objects, under its noun."""
    data = envelope.get("data")
    if not isinstance(data, dict) or data.get("id") in run.created_ids():
        return
    noun = str(envelope.get("type", "")).split(".", 1)[0]
    run.objects.setdefault(noun, data)


# Names people try that are not events of the spec, and the event that covers them.
NOT_EVENTS = {
    "payment.expired": "an expired payment fires payment.failed (the spec's simulate table)",
    "payment.pending": "a new payment fires no event; payment.completed or payment.failed follow",
    "payment.created": "a new payment fires no event; payment.completed or payment.failed follow",
    "refund.succeeded": "payment.refunded replaces refund.succeeded (the spec's renames)",
    "refund.created": "a refund opens a claim: claim.opened (and payment.refunded when done)",
    "payout.processing": "a payout fires payout.completed or payout.failed when it ends",
}


def _event_name(value: str) -> str:
    if value in NOT_EVENTS:
        raise typer.BadParameter(f"{value!r} is not an event: {NOT_EVENTS[value]}")
    if value not in EVENT_TYPES:
        raise typer.BadParameter(
            f"unknown event {value!r}{did_you_mean(value, EVENT_TYPES)}; one of: "
            + ", ".join(EVENT_TYPES)
        )
    return value


EventArgument = Annotated[
    str,
    typer.Argument(
        help=f"One of: {', '.join(EVENT_TYPES)}.",
        parser=_event_name,
        metavar="EVENT",
        autocompletion=completion.event_names,
    ),
]
MethodOption = Annotated[
    str,
    typer.Option(
        "--method",
        help="paymentMethodId for the payments it creates.",
        autocompletion=completion.method_ids,
    ),
]
Timeout = Annotated[
    float,
    typer.Option(
        "--timeout",
        parser=positive_seconds,
        metavar="SECONDS",
        help="Seconds to wait for the event once driven.",
    ),
]
AdvanceClock = Annotated[
    bool,
    typer.Option(
        "--advance-clock",
        help="Let it move the server's simulated clock (shared by every client of the "
        "server) for events that need time: claim.resolved, settlement.*, withdrawal.*.",
    ),
]


def trigger(
    ctx: typer.Context,
    event: EventArgument,
    method: MethodOption = "1001",
    timeout: Timeout = 10.0,
    advance_clock: AdvanceClock = False,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Make EVENT fire: create and drive whatever it needs.

    Prints the event and one line per object it made; --json for them in full.
    """
    _refuse_without_clock(event, advance_clock)
    options = resolve(ctx, base_url, api_key, as_json)
    run = Trigger(
        options.client(),
        event,
        method,
        timeout,
        may_advance=advance_clock,
        # Its temporary inbox is the tool's own housekeeping, tagged like listen's
        # subscription; what it drives (payments, simulations, clock moves) is what the user
        # asked for.
        inbox_client=options.client("trigger", tag_writes=True),
    )
    envelope = _drive(run)
    _include_event_object(run, envelope)
    data = {
        "event": envelope,
        "objects": run.objects,
        "created": created(run.objects),
        "clockAdvancedSeconds": run.advanced,
    }
    emit(options, data, lambda: _human(run, envelope))


def _refuse_without_clock(event: str, advance_clock: bool) -> None:
    import sys

    if event in NEEDS_CLOCK and not advance_clock:
        sys.stderr.write(
            f"payorch trigger: {event} needs simulated time to pass ({NEEDS_CLOCK[event]}); "
            "add --advance-clock to let trigger move the server's clock\n"
        )
        raise typer.Exit(ExitStatus.USAGE)


def _drive(run: Trigger) -> dict[str, Any]:
    """Run the recipe with a temporary inbox listening for the event; the event's envelope,
    or exit 1 with why it did not come."""
    inbox_client = run.inbox_client or run.client
    with api_errors("trigger"):
        inbox = inbox_client.create_webhook(None, [run.event], "payorch trigger")
        run.inbox = inbox["id"]
        try:
            run.run()
            envelope = run.wait()
        except TriggerFailed as exc:
            raise typer.Exit(_fail(str(exc))) from None
        finally:
            inbox_client.delete_webhook(run.inbox)
    if envelope is None:
        raise typer.Exit(_fail(f"{run.event} did not fire within {run.timeout:g} s"))
    return envelope


def _fail(message: str) -> int:
    import sys

    sys.stderr.write(f"payorch trigger: {message}\n")
    return 1
