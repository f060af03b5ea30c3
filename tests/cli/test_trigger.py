"""`payorch trigger EVENT` for every event type of the spec, each on a fresh simulator."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from payorch_cli.main import app
from payorch_cli.scenario.fixture import Payorch
from payorch_cli.scenario.model import EVENT_TYPES

runner = CliRunner()


@pytest.mark.parametrize("event", EVENT_TYPES)
def test_trigger_fires_the_event(payorch: Payorch, event: str) -> None:
    from payorch_cli.commands.trigger import NEEDS_CLOCK

    args = ["--base-url", payorch.base_url, "--json", "trigger", event]
    if event in NEEDS_CLOCK:
        args.append("--advance-clock")
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["event"]["type"] == event
    assert body["event"]["id"].startswith("evt_")
    assert body["objects"]  # what it created to get there
    assert body["created"] and all(body["created"].values())
    # Only the events that need time move the clock (and only when told to).
    assert (body["clockAdvancedSeconds"] > 0) == (event in NEEDS_CLOCK)
    # The user's own subscriptions got it too; the trigger's inbox is gone.
    assert payorch.events.wait_for(event)["id"] == body["event"]["id"]
    hooks = payorch.client.list_webhooks()["data"]
    assert [h["description"] for h in hooks] == ["payorch pytest fixture"]


def test_trigger_human_output_shows_objects_the_clock_and_the_event(payorch: Payorch) -> None:
    result = runner.invoke(
        app, ["--base-url", payorch.base_url, "trigger", "claim.resolved", "--advance-clock"]
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("event claim.resolved  evt_")
    # One line per object it made (id, status, money), each once: the objects in full and
    # the event's data are for --json.
    assert re.fullmatch(r"  payment  TXN-\w+  completed  100 USD", lines[2]), lines
    assert re.fullmatch(r"  claim    CLM-\w+  resolved  [\d.]+ MXN", lines[3]), lines
    assert lines[4:] == ["  clock    advanced 7d", "--json for the objects and the event in full"]
    assert result.stdout.count("TXN-") == 1


def test_trigger_refuses_an_unknown_event() -> None:
    result = runner.invoke(app, ["trigger", "payment.complete"])
    assert result.exit_code == 2 and "unknown event 'payment.complete'" in result.output


def test_every_event_type_has_a_recipe_and_a_missing_one_fails_plainly() -> None:
    from payorch.vocabulary import EVENT_TYPES
    from payorch_cli.commands.trigger import RECIPES, Trigger, TriggerFailed

    assert set(RECIPES) == set(EVENT_TYPES)
    run = Trigger(client=None, event="payment.teleported", method="1001", timeout=0)  # type: ignore[arg-type]  # no recipe runs, so no client is called
    with pytest.raises(TriggerFailed, match=r"no recipe for payment\.teleported"):
        run.run()


@pytest.mark.parametrize("event", ["settlement.closed", "claim.resolved", "withdrawal.completed"])
def test_an_event_that_needs_time_is_refused_without_advance_clock(
    payorch: Payorch, event: str
) -> None:
    before = payorch.client.get("/_sim/clock")["offsetSeconds"]
    result = runner.invoke(app, ["--base-url", payorch.base_url, "trigger", event])
    assert result.exit_code == 2 and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith(f"payorch trigger: {event} needs simulated time to pass")
    assert line.endswith("add --advance-clock to let trigger move the server's clock")
    # Nothing was made and the shared clock did not move.
    assert payorch.client.get("/_sim/clock")["offsetSeconds"] == before
    assert payorch.client.get("/payments")["pagination"]["total"] == 0
    assert [h["description"] for h in payorch.client.list_webhooks()["data"]] == [
        "payorch pytest fixture"
    ]


def test_advance_refuses_to_move_the_clock_unless_allowed() -> None:
    from payorch_cli.commands.trigger import Trigger, TriggerFailed

    run = Trigger(client=None, event="x", method="1001", timeout=0, may_advance=False)  # type: ignore[arg-type]  # refused before the client is called
    with pytest.raises(TriggerFailed, match="add --advance-clock"):
        run.advance(60)


def test_settlement_closed_shows_the_settlement_of_the_payment_it_created(
    payorch: Payorch,
) -> None:
    # An older payment settles a day earlier: its settlement closes first on the way.
    older = payorch.client.post("/payments", {"amount": 30, "paymentMethodId": "1001"})
    payorch.client.post(f"/payments/{older['transactionId']}/simulate", {"action": "paid"})
    payorch.advance("1d")

    result = runner.invoke(
        app,
        [
            "--base-url",
            payorch.base_url,
            "--json",
            "trigger",
            "settlement.closed",
            "--advance-clock",
        ],
    )
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    payment_id = body["objects"]["payment"]["id"]
    settlement = body["event"]["data"]
    assert settlement["transactionIds"] == [payment_id]
    assert older["transactionId"] not in settlement["transactionIds"]
    assert body["objects"]["settlement"]["id"] == settlement["id"]
    assert body["created"] == {"payment": payment_id, "settlement": settlement["id"]}

    human = runner.invoke(
        app, ["--base-url", payorch.base_url, "trigger", "settlement.closed", "--advance-clock"]
    )
    assert human.exit_code == 0, human.output
    # A second run: its own payment, and the settlement that took it.
    assert re.search(r"^  payment     TXN-\w+  completed  ", human.stdout, re.M)
    assert re.search(r"^  settlement  STL-\w+  closed", human.stdout, re.M)


def test_the_log_shows_what_trigger_drove_not_its_own_inbox(payorch: Payorch) -> None:
    """The payment it creates and drives is what the user asked for, in the log and in what
    `record` writes; its temporary inbox (subscribe, poll, unsubscribe) is the tool's own
    housekeeping, tagged like `listen`'s subscription (issue 23 items 9, 16)."""
    before = {row["id"] for row in payorch.client.get("/_sim/requests")["data"]}
    result = runner.invoke(app, ["--base-url", payorch.base_url, "trigger", "payment.completed"])
    assert result.exit_code == 0, result.output
    rows = payorch.client.get("/_sim/requests", limit=100)["data"]
    rows = [row for row in rows if row["id"] not in before]  # the fixture's own setup
    shown = [(row["method"], row["path"].split("/")[3]) for row in reversed(rows)]
    assert ("POST", "payments") in shown
    assert not [row for row in shown if row[1] == "webhooks"], shown
    every = payorch.client.get("/_sim/requests", limit=100, includeTools="true")["data"]
    tagged = {(row["method"], row["tool"]) for row in every if "/webhooks" in row["path"]}
    assert {("POST", "trigger"), ("DELETE", "trigger")} <= tagged


@pytest.mark.parametrize(
    ("name", "covered_by"),
    [("payment.expired", "payment.failed"), ("refund.succeeded", "payment.refunded")],
)
def test_a_name_that_is_not_an_event_points_to_the_one_that_covers_it(
    name: str, covered_by: str
) -> None:
    """`payment.expired` suggested `payment.captured` (the closest spelling); the spec fires
    payment.failed for an expiry."""
    result = runner.invoke(app, ["trigger", name])
    assert result.exit_code == 2
    assert f"{name!r} is not an event: " in result.stderr and covered_by in result.stderr
    assert "payment.captured" not in result.stderr
