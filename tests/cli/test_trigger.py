"""`payorch trigger EVENT` for every event type of the spec, each on a fresh simulator."""

from __future__ import annotations

import json

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
    assert "payment" in result.stdout and "TXN-" in result.stdout
    assert "created payment TXN-" in result.stdout and ", claim CLM-" in result.stdout
    assert "clock advanced 7d" in result.stdout
    assert "event claim.resolved" in result.stdout


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
    assert "created payment TXN-" in human.stdout and ", settlement STL-" in human.stdout
