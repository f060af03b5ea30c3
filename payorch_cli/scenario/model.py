"""What a loaded scenario is: plain dataclasses, every part with its location."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from payorch.vocabulary import EVENT_TYPES  # noqa: F401 - re-exported
from payorch_cli.scenario.matchers import Matcher
from payorch_cli.scenario.source import Loc

# Names a `${...}` may use without anything defining them.
BUILTINS = ("env", "run", "scenario", "receiver", "base_url")


@dataclass
class HttpCall:
    method: str
    path: Any  # compiled string: relative to /api/v1, or /_sim/..., or an absolute URL
    headers: dict[str, Any] = field(default_factory=dict)
    query: dict[str, Any] = field(default_factory=dict)
    body: Any = None
    has_body: bool = False
    raw: Any = None  # a string body sent as is (no JSON encoding)


@dataclass
class Expectation:
    loc: Loc
    status: Matcher | None = None
    error: Matcher | None = None
    json: Matcher | None = None
    headers: dict[str, Matcher] = field(default_factory=dict)


@dataclass
class SaveRule:
    name: str
    source: str  # json | header | status
    path: str  # dotted path into the JSON, or a header name
    loc: Loc


@dataclass
class Retry:
    attempts: int
    interval: float


@dataclass
class EventExpectation:
    type: str
    loc: Loc
    match: Matcher | None = None
    headers: dict[str, Matcher] = field(default_factory=dict)
    within: float = 5.0
    absent: bool = False  # expect_no_event


@dataclass
class ReceiverChange:
    status: Any = None
    secret: Any = None


@dataclass
class Step:
    index: int  # 1-based
    name: str
    kind: str
    loc: Loc
    as_: Any = None  # a compiled credential name, or None for the scenario's
    http: HttpCall | None = None
    expect: Expectation | None = None
    save: list[SaveRule] = field(default_factory=list)
    retry: Retry | None = None
    seconds: float | None = None
    event: EventExpectation | None = None
    receiver: ReceiverChange | None = None
    state: str | None = None  # restore_state / save_state: the saved state's name

    @property
    def label(self) -> str:
        return f"{self.index}. {self.name}"


@dataclass
class Scenario:
    name: str
    path: str
    loc: Loc
    steps: list[Step]
    description: str = ""
    tags: list[str] = field(default_factory=list)
    as_: Any = None
    vars: dict[str, Any] = field(default_factory=dict)
    matrix: list[dict[str, Any]] = field(default_factory=list)
    uses_receiver: bool = False

    def instances(self) -> list[Instance]:
        if not self.matrix:
            return [Instance(self, {})]
        return [Instance(self, cell) for cell in self.matrix]


@dataclass
class Instance:
    """One run of a scenario: the scenario itself, or one cell of its matrix."""

    scenario: Scenario
    cell: dict[str, Any]

    @property
    def cell_id(self) -> str:
        return "-".join(str(v) for v in self.cell.values())

    @property
    def title(self) -> str:
        if not self.cell:
            return self.scenario.name
        cells = ", ".join(f"{k}={v}" for k, v in self.cell.items())
        return f"{self.scenario.name} [{cells}]"

    @property
    def node_id(self) -> str:
        """A stable id for filters and reports: path::name[cell]."""
        suffix = f"[{self.cell_id}]" if self.cell else ""
        return f"{self.scenario.path}::{self.scenario.name}{suffix}"


def matrix_cells(axes: dict[str, list[Any]]) -> list[dict[str, Any]]:
    names = list(axes)
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*axes.values())]
