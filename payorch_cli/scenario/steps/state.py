"""`save_state` and `restore_state`: the server's whole state (its store and clock) saved under a
name, and put back (POST /_sim/state, /_sim/state/{name}/restore)."""

from __future__ import annotations

from typing import Any, ClassVar
from urllib.parse import quote

from payorch_cli.scenario.checks import STATE_NAME
from payorch_cli.scenario.http import Exchange
from payorch_cli.scenario.model import Step
from payorch_cli.scenario.results import Failure, StepFailed, StepResult
from payorch_cli.scenario.source import Node
from payorch_cli.scenario.steps.base import StepKind
from payorch_cli.scenario.steps.reading import StepChecker
from payorch_cli.scenario.steps.running import StepRun, error_summary


class StateStep(StepKind):
    """A step on a saved state, named by the action."""

    expected: ClassVar[int]  # the status that says it was done
    done: ClassVar[str]  # as in "the state x was not <done>"

    def parse(
        self, checker: StepChecker, step: Step, fields: dict[str, Node], defined: set[str]
    ) -> None:
        step.state = checker.state_name(fields[self.name], f"`{self.name}`")

    def send(self, run: StepRun, step: Step, result: StepResult) -> Exchange:
        raise NotImplementedError

    def run(self, run: StepRun, step: Step, result: StepResult) -> None:
        assert result.credential is not None and step.state is not None
        exchange = self.send(run, step, result)
        result.exchange = exchange
        if exchange.status != self.expected:
            raise StepFailed(
                Failure(
                    f"the state {step.state} was not {self.done}: "
                    f"{exchange.status}{error_summary(exchange.json)}"
                )
            )
        result.note = f"{exchange.json.get('transactions')} transactions"


def state_schema(description: str) -> dict[str, Any]:
    return {"type": "string", "pattern": STATE_NAME.pattern, "description": description}


class RestoreState(StateStep):
    name = "restore_state"
    description = (
        "POST /_sim/state/{name}/restore: the server back to a saved state (its store and "
        "clock); the receiver's subscriptions are made again if the state does not hold them, "
        "and the events received before no longer match."
    )
    schema: ClassVar[dict[str, Any]] = state_schema("The saved state's name.")
    expected, done = 200, "restored"

    def send(self, run: StepRun, step: Step, result: StepResult) -> Exchange:
        assert result.credential is not None and step.state is not None
        name = quote(step.state, safe="")
        return run.send("POST", f"/_sim/state/{name}/restore", result.credential)

    def run(self, run: StepRun, step: Step, result: StepResult) -> None:
        super().run(run, step, result)
        run.follow_restore()

    def default_name(self, step: Step) -> str:
        return f"restore the saved state {step.state}"


class SaveState(StateStep):
    name = "save_state"
    description = (
        "POST /_sim/state: save the server's whole state under a name (replacing one of that name)."
    )
    schema: ClassVar[dict[str, Any]] = state_schema("The name to save it as.")
    expected, done = 201, "saved"

    def send(self, run: StepRun, step: Step, result: StepResult) -> Exchange:
        assert result.credential is not None
        body = {"name": step.state, "overwrite": True}
        return run.send("POST", "/_sim/state", result.credential, body=body)

    def default_name(self, step: Step) -> str:
        return f"save the state as {step.state}"
