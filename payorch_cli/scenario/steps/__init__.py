"""The kinds of scenario steps, one `StepKind` subclass each, registered by name in `REGISTRY`
(steps/base.py says what a kind holds). The modules are imported here in the order the kinds are
listed in messages and in scenario.schema.json.

A new kind is a subclass in one of these modules (or a new module imported below), its fields in
`payorch_cli/scenario/model.py` if the existing ones do not hold what it reads, a section in
docs/scenarios.md, and its schema entry written into scenario.schema.json by
`python -m payorch_cli.scenario.schema` (a test fails until it is).
"""

from __future__ import annotations

# The import order is the kinds' order.
# isort: off
from payorch_cli.scenario.steps import http  # noqa: F401
from payorch_cli.scenario.steps import providers  # noqa: F401
from payorch_cli.scenario.steps import clock  # noqa: F401
from payorch_cli.scenario.steps import events  # noqa: F401
from payorch_cli.scenario.steps import receiver  # noqa: F401
from payorch_cli.scenario.steps import state  # noqa: F401

# isort: on
from payorch_cli.scenario.steps.base import REGISTRY, StepKind

KINDS = tuple(REGISTRY)

__all__ = ["KINDS", "REGISTRY", "StepKind"]
