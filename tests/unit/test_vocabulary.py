"""The copies of payorch.vocabulary's name lists that need more than the names agree with it: the
simulator's transition tables, the CLI's typer choices and the TUI's rule for which simulate
actions a payment's status allows (and the events its confirmations name). Other users import the
names."""

from __future__ import annotations

from payorch.vocabulary import PAYMENT_SIMULATE_ACTIONS, PAYOUT_SIMULATE_ACTIONS
from payorch_cli.commands.simulate import PaymentAction, PayoutAction
from payorch_cli.tui.backend import SIMULATE_REQUIRES
from simulator.domain import states


def test_payment_simulate_actions() -> None:
    assert tuple(states.SIMULATE_ACTIONS) == PAYMENT_SIMULATE_ACTIONS
    assert tuple(action.value for action in PaymentAction) == PAYMENT_SIMULATE_ACTIONS


def test_the_tui_offers_an_action_only_from_the_status_it_requires() -> None:
    required = {action: t.requires for action, t in states.SIMULATE_ACTIONS.items()}
    assert required == SIMULATE_REQUIRES


def test_payout_simulate_actions() -> None:
    assert tuple(states.PAYOUT_SIMULATE_ACTIONS) == PAYOUT_SIMULATE_ACTIONS
    assert tuple(action.value for action in PayoutAction) == PAYOUT_SIMULATE_ACTIONS


def test_the_tui_confirmations_name_the_events_the_table_fires() -> None:
    """The TUI asks before some simulate actions and says which events they send: that prose
    is a copy of the table's events, held to it here."""
    import re

    from payorch_cli.tui.app import CONFIRM

    for action, (_question, consequence) in CONFIRM.items():
        named = set(re.findall(r"\b[a-z]+\.[a-z_]+\b", consequence))
        assert named <= set(states.SIMULATE_ACTIONS[action].events), (action, named)
