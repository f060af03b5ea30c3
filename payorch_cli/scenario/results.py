"""What running a scenario instance gives: each step's result (its exchange, the credential it
ran as, its failure with mismatches and a diff), and the instance's."""

from __future__ import annotations

from dataclasses import dataclass, field

from payorch_cli.credentials import Credential
from payorch_cli.scenario.http import Exchange
from payorch_cli.scenario.matchers import Mismatch
from payorch_cli.scenario.model import Instance, Step


@dataclass
class Failure:
    message: str
    mismatches: list[Mismatch] = field(default_factory=list)
    diff: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class StepResult:
    step: Step
    status: str  # passed | failed | skipped
    duration: float = 0.0  # seconds
    exchange: Exchange | None = None
    credential: Credential | None = None
    failure: Failure | None = None
    note: str = ""


@dataclass
class InstanceResult:
    instance: Instance
    steps: list[StepResult] = field(default_factory=list)
    duration: float = 0.0
    error: str | None = None  # could not run at all (setup)
    base_url: str = ""

    @property
    def passed(self) -> bool:
        return self.error is None and all(s.status != "failed" for s in self.steps)

    @property
    def failed_step(self) -> StepResult | None:
        return next((s for s in self.steps if s.status == "failed"), None)


class StepFailed(Exception):
    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure
