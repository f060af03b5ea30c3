"""The copies of payorch.vocabulary's name lists that need more than the names agree with it: the
simulator's transition tables and the CLI's typer choices. Other users import the names."""

from __future__ import annotations

from payorch.vocabulary import PAYMENT_SIMULATE_ACTIONS, PAYOUT_SIMULATE_ACTIONS
from payorch_cli.commands.simulate import PaymentAction, PayoutAction
from simulator.domain import payouts, states


def test_payment_simulate_actions() -> None:
    assert tuple(states.SIMULATE_ACTIONS) == PAYMENT_SIMULATE_ACTIONS
    assert tuple(action.value for action in PaymentAction) == PAYMENT_SIMULATE_ACTIONS


def test_payout_simulate_actions() -> None:
    assert tuple(payouts.SIMULATE_ACTIONS) == PAYOUT_SIMULATE_ACTIONS
    assert tuple(action.value for action in PayoutAction) == PAYOUT_SIMULATE_ACTIONS
