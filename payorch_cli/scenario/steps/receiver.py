"""`receiver`: changes what the runner's event receiver answers, or the secret it verifies
signatures with."""

from __future__ import annotations

from typing import Any, ClassVar

from payorch_cli.scenario.expressions import Interp, render, roots
from payorch_cli.scenario.model import ReceiverChange, Step
from payorch_cli.scenario.results import Failure, StepFailed, StepResult
from payorch_cli.scenario.source import Node
from payorch_cli.scenario.steps.base import StepKind
from payorch_cli.scenario.steps.reading import StepChecker
from payorch_cli.scenario.steps.running import StepRun


class ChangeReceiver(StepKind):
    name = "receiver"
    description = "Change what the receiver answers, or the secret it verifies with."
    schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "minProperties": 1,
        "additionalProperties": False,
        "properties": {"status": {"type": ["integer", "string"]}, "secret": {"type": "string"}},
    }
    keys = ("name",)
    listens = True

    def parse(
        self, checker: StepChecker, step: Step, fields: dict[str, Node], defined: set[str]
    ) -> None:
        action = fields[self.name]
        step.receiver = self.change(checker, action)
        if step.receiver is not None:
            used = roots(step.receiver.status) | roots(step.receiver.secret)
            checker.names(used, action.loc, defined, f"in step {step.index}")

    def change(self, checker: StepChecker, node: Node) -> ReceiverChange | None:
        fields = checker.keys(
            checker.mapping(node, "`receiver`") or [], ("status", "secret"), "`receiver`"
        )
        if not fields:
            checker.error(
                node.loc,
                "`receiver` takes `status` (what it answers from now on) "
                "and/or `secret` (what it verifies signatures with)",
            )
            return None
        change = ReceiverChange()
        if "status" in fields:
            change.status = checker.compiled(fields["status"])
            if not isinstance(change.status, int | Interp):
                checker.error(fields["status"].loc, "`status` must be an HTTP status code")
        if "secret" in fields:
            change.secret = checker.template(fields["secret"], "`secret`")
        return change

    def default_name(self, step: Step) -> str:
        return "change the receiver"

    def run(self, run: StepRun, step: Step, result: StepResult) -> None:
        change = step.receiver
        assert change is not None
        if run.receiver is None:
            raise StepFailed(Failure("no receiver runs in this scenario (production only?)"))
        if change.status is not None:
            run.receiver.status = int(render(change.status, run.scope))
        if change.secret is not None:
            info = run.slots.get(run.default.key or "")
            if info is None:
                raise StepFailed(Failure("the receiver has no subscription to re-key"))
            run.receiver.arm(info["slot"], str(render(change.secret, run.scope)))
