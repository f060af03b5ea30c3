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
    result = runner.invoke(app, ["--base-url", payorch.base_url, "--json", "trigger", event])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["event"]["type"] == event
    assert body["event"]["id"].startswith("evt_")
    assert body["objects"]  # what it created to get there
    # The user's own subscriptions got it too; the trigger's inbox is gone.
    assert payorch.events.wait_for(event)["id"] == body["event"]["id"]
    hooks = payorch.client.list_webhooks()["data"]
    assert [h["description"] for h in hooks] == ["payorch pytest fixture"]


def test_trigger_human_output_shows_objects_the_clock_and_the_event(payorch: Payorch) -> None:
    result = runner.invoke(app, ["--base-url", payorch.base_url, "trigger", "claim.resolved"])
    assert result.exit_code == 0, result.output
    assert "payment" in result.stdout and "TXN-" in result.stdout
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
