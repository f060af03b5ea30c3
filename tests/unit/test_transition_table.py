"""The transition tables (pay-ins', payouts') are the one list of each action's statuses and
events: each service has an effect for exactly what its table reaches, and every event a table
names is a known event type."""

from __future__ import annotations

from payorch.vocabulary import EVENT_TYPES, TRANSACTION_STATUSES
from simulator.app import create_app
from simulator.domain.payouts.service import PAYOUT_STATUSES
from simulator.domain.states import PAYOUT_SIMULATE_ACTIONS, SIMULATE_ACTIONS
from simulator.http.keys import PAYMENTS, PAYOUTS, REFUNDS
from simulator.settings import Settings


def test_the_payment_service_has_an_effect_for_exactly_the_tables_rows() -> None:
    app = create_app(Settings(data_dir=None, tick_seconds=0, seed=1))
    assert set(app[PAYMENTS].effects) == set(SIMULATE_ACTIONS)
    # Wired once: the payment service drives the refund service the app serves.
    assert app[PAYMENTS].refunds is app[REFUNDS]


def test_every_row_names_known_statuses_and_event_types() -> None:
    for transition in SIMULATE_ACTIONS.values():
        assert {transition.requires, transition.becomes} <= set(TRANSACTION_STATUSES)
        for simulator in (True, False):
            events = transition.events_for(simulator=simulator)
            assert events and set(events) <= set(EVENT_TYPES)


def test_a_provider_confirmation_fires_no_capture_the_simulator_does() -> None:
    paid = SIMULATE_ACTIONS["paid"]
    assert paid.events_for(simulator=True) == ("payment.completed", "payment.captured")
    assert paid.events_for(simulator=False) == ("payment.completed",)


def test_the_payout_service_has_an_effect_for_every_status_its_table_moves_to() -> None:
    app = create_app(Settings(data_dir=None, tick_seconds=0, seed=1))
    moves = {t.becomes for t in PAYOUT_SIMULATE_ACTIONS.values() if t.becomes != t.requires}
    assert set(app[PAYOUTS].effects) == moves


def test_every_payout_row_names_payout_statuses_known_events_and_a_failure_reason() -> None:
    for action, transition in PAYOUT_SIMULATE_ACTIONS.items():
        assert {transition.requires, transition.becomes} <= set(PAYOUT_STATUSES), action
        assert set(transition.events) <= set(EVENT_TYPES), action
        # A row that moves the payout fires an event; a failure says why.
        assert bool(transition.events) == (transition.becomes != transition.requires), action
        assert (transition.failure_reason is not None) == (transition.becomes == "failed"), action
