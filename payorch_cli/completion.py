"""Tab completion of values: what the shell offers after `--method`, `trigger`, `--namespace`,
`state restore` and the like.

Each completer is called by typer while the user presses Tab, so it must be quick and silent:
values that live in the package (event names, fixture merchants) come from there; values that
live in a server (payment method ids, namespaces, saved states) are asked of the server the
command would talk to (PAYORCH_BASE_URL, else the default), with a short timeout, and a server
that is not there, or answers an error, completes nothing: never a traceback in the prompt.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

from payorch.vocabulary import EVENT_TYPES

# Long enough for a local server under load, short enough that Tab never feels stuck.
ASK_TIMEOUT_SECONDS = 0.5

Completer = Callable[[str], list[str]]


def _starting_with(values: Iterable[str], incomplete: str) -> list[str]:
    return sorted({value for value in values if value.startswith(incomplete)})


def _ask(path: str) -> Any:
    """The JSON answer of GET `path` on the configured server, or None on any failure."""
    from payorch_cli.client import ApiError, Client

    client = Client(timeout=ASK_TIMEOUT_SECONDS, namespace=os.environ.get("PAYORCH_NAMESPACE"))
    try:
        return client.get(path)
    except (ApiError, OSError, ValueError):
        return None
    finally:
        client.close()


def event_names(incomplete: str) -> list[str]:
    return _starting_with(EVENT_TYPES, incomplete)


def method_ids(incomplete: str) -> list[str]:
    answer = _ask("/payment-methods")
    methods = answer.get("methods", []) if isinstance(answer, dict) else []
    return _starting_with((str(m.get("paymentMethodId")) for m in methods), incomplete)


def namespaces(incomplete: str) -> list[str]:
    answer = _ask("/_sim/namespaces")
    rows = answer.get("data", []) if isinstance(answer, dict) else []
    return _starting_with((str(row.get("name")) for row in rows), incomplete)


def saved_states(incomplete: str) -> list[str]:
    answer = _ask("/_sim/state")
    rows = answer.get("data", []) if isinstance(answer, dict) else []
    return _starting_with((str(row.get("name")) for row in rows), incomplete)


def merchants(incomplete: str) -> list[str]:
    """The fixture merchants' ids (read from the package's fixtures: no server needed)."""
    try:
        from simulator.fixture_loader import load_catalog

        catalog = load_catalog(None)
    except Exception:  # a completion never fails loudly; the user's fixtures may be broken
        return []
    return _starting_with((str(m) for m in catalog.merchants), incomplete)
