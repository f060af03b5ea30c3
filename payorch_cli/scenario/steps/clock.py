"""`advance_clock`: moves the simulator's clock (POST /_sim/clock/advance)."""

from __future__ import annotations

from typing import Any, ClassVar

from payorch_cli.durations import format_duration
from payorch_cli.scenario.model import Step
from payorch_cli.scenario.results import Failure, StepFailed, StepResult
from payorch_cli.scenario.source import Node
from payorch_cli.scenario.steps.base import StepKind
from payorch_cli.scenario.steps.reading import StepChecker, duration_schema
from payorch_cli.scenario.steps.running import StepRun, error_summary


class AdvanceClock(StepKind):
    name = "advance_clock"
    description = "POST /_sim/clock/advance"
    schema: ClassVar[dict[str, Any]] = duration_schema()

    def parse(
        self, checker: StepChecker, step: Step, fields: dict[str, Node], defined: set[str]
    ) -> None:
        step.seconds = checker.duration(fields[self.name], "`advance_clock`")

    def default_name(self, step: Step) -> str:
        if step.seconds:
            return f"advance the clock {format_duration(step.seconds)}"
        return self.name

    def run(self, run: StepRun, step: Step, result: StepResult) -> None:
        assert result.credential is not None and step.seconds is not None
        exchange = run.send(
            "POST", "/_sim/clock/advance", result.credential, body={"seconds": step.seconds}
        )
        result.exchange = exchange
        if exchange.status != 200:
            raise StepFailed(
                Failure(f"the clock did not move: {exchange.status}{error_summary(exchange.json)}")
            )
        result.note = f"now {exchange.json.get('now')}"
