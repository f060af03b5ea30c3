"""The copies of payorch.vocabulary's name lists that need more than the names agree with it: the
simulator's transition tables, the CLI's typer choices and the TUI's rule for which simulate
actions a payment's status allows (and the events its confirmations name). Other users import the
names."""

from __future__ import annotations

from payorch.vocabulary import API_PREFIX, PAYMENT_SIMULATE_ACTIONS, PAYOUT_SIMULATE_ACTIONS
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


def test_provider_behaviours_are_the_vocabularys_everywhere() -> None:
    """One table (payorch.vocabulary) for what a provider can be scripted to do: the provider
    world checks against it (through the catalogue), the CLI offers it, the OpenAPI document
    enumerates it (filled when built) and the scenario steps take it."""
    from payorch.vocabulary import (
        ACCEPTING_BEHAVIOUR,
        OUTAGE_BEHAVIOUR,
        PROVIDER_BEHAVIOURS,
        PROVIDER_BEHAVIOURS_BY_KIND,
        PROVIDER_CALLBACK_MODES,
        PROVIDER_CALLBACK_OUTCOMES,
    )
    from payorch_cli.commands.providers import Behaviour, CallbackMode, CallbackOutcome
    from payorch_cli.scenario.steps.providers import PROVIDER_BEHAVIOURS as SCENARIO_BEHAVIOURS
    from simulator.domain import catalog
    from simulator.domain.providers.world import ANSWERS
    from simulator.openapi.document import document

    assert PROVIDER_BEHAVIOURS_BY_KIND["payin"] == catalog.PAYIN_BEHAVIOURS
    assert PROVIDER_BEHAVIOURS_BY_KIND["payout"] == catalog.PAYOUT_BEHAVIOURS
    # The world says what each behaviour of each kind answers, for exactly those behaviours.
    assert {
        kind: tuple(answers) for kind, answers in ANSWERS.items()
    } == PROVIDER_BEHAVIOURS_BY_KIND
    assert tuple(b.value for b in Behaviour) == PROVIDER_BEHAVIOURS
    assert tuple(o.value for o in CallbackOutcome) == PROVIDER_CALLBACK_OUTCOMES
    assert tuple(m.value for m in CallbackMode) == PROVIDER_CALLBACK_MODES
    assert SCENARIO_BEHAVIOURS == PROVIDER_BEHAVIOURS
    schemas = document()["components"]["schemas"]
    assert schemas["SimProviderBehaviour"]["enum"] == list(PROVIDER_BEHAVIOURS)
    update = schemas["SimProviderUpdate"]["properties"]
    assert update["behaviour"]["enum"] == [*PROVIDER_BEHAVIOURS, None]
    assert update["callback"]["properties"]["mode"]["enum"] == [*PROVIDER_CALLBACK_MODES, None]
    # The renderers' and the TUI's outage key's names work on a provider of either kind.
    for behaviours in PROVIDER_BEHAVIOURS_BY_KIND.values():
        assert {ACCEPTING_BEHAVIOUR, OUTAGE_BEHAVIOUR} <= set(behaviours)


def test_the_namespace_rule_and_the_credential_in_body_paths_are_spelled_once() -> None:
    """payorch/vocabulary.py is the one home of the namespace name rule and of the endpoints
    that carry their credential in the body: the server, the front, the proxy's configuration,
    `payorch ns`, the TUI and the MCP server import them. A second spelling (a string holding the
    rule, or one module naming both endpoints) fails here; the URL table names every route,
    these two included, and the OpenAPI document, which cannot import, is held to the rule."""
    import ast
    from pathlib import Path

    from payorch.vocabulary import CREDENTIAL_IN_BODY_PATHS, NAMESPACE_NAME_RULE
    from simulator.openapi.document import document

    root = Path(__file__).resolve().parents[2]
    allowed = {root / "payorch" / "vocabulary.py", root / "simulator" / "http" / "routes.py"}
    endings = tuple(path.removeprefix(API_PREFIX) for path in CREDENTIAL_IN_BODY_PATHS)
    found = []
    for package in ("simulator", "payorch", "payorch_cli"):
        for path in sorted((root / package).rglob("*.py")):
            if path in allowed:
                continue
            strings = [
                node.value
                for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                if isinstance(node, ast.Constant) and isinstance(node.value, str)
            ]
            where = str(path.relative_to(root))
            found += [f"{where}: {s!r}" for s in strings if NAMESPACE_NAME_RULE[:18] in s]
            named = {
                end for end in endings for s in strings if s.startswith("/") and s.endswith(end)
            }
            if named == set(endings):
                found.append(f"{where}: names {sorted(named)}")
    assert found == [], "import them from payorch.vocabulary"
    schema = document()["components"]["schemas"]["NamespaceName"]
    assert schema["pattern"] == f"^{NAMESPACE_NAME_RULE}$"
