"""A step kind: one `StepKind` subclass per kind of step (`create_payment`, `advance_clock`,
`expect_event`...) says how such a step is read from YAML (`parse`), how it runs (`run`), the name
a report gives it when the file gives none, and its entry in scenario.schema.json (`schema` of the
value under the kind's key, `description`, and the step's other `keys`). Defining the subclass
registers it in `REGISTRY`, in the order `steps/__init__.py` imports the modules: the order
messages and the schema list the kinds in.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar

from payorch_cli.scenario.model import Step
from payorch_cli.scenario.results import StepResult
from payorch_cli.scenario.source import Node
from payorch_cli.scenario.steps.reading import FIELD_SCHEMAS, StepChecker
from payorch_cli.scenario.steps.running import StepRun

REGISTRY: dict[str, StepKind] = {}  # every step kind by its key


class StepKind:
    name: ClassVar[str]  # the step's key that says what it does
    description: ClassVar[str]  # the schema's description of such a step
    schema: ClassVar[dict[str, Any]]  # the schema of the value under `name`
    keys: ClassVar[tuple[str, ...]] = ("name", "as")  # the step's other keys (FIELD_SCHEMAS)
    listens: ClassVar[bool] = False  # the runner hosts its event receiver for such a step

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            REGISTRY[cls.name] = cls()

    def parse(
        self, checker: StepChecker, step: Step, fields: dict[str, Node], defined: set[str]
    ) -> None:
        """Fill in `step` from its keys (`fields[self.name]` is the action); every problem goes
        to `checker`. `defined`: the names a `${...}` of this step may use."""
        raise NotImplementedError

    def run(self, run: StepRun, step: Step, result: StepResult) -> None:
        """Carry out `step`, filling in `result`; a StepFailed says why it failed."""
        raise NotImplementedError

    def default_name(self, step: Step) -> str:
        """What a report calls a step the file did not name."""
        return self.name

    def step_schema(self) -> dict[str, Any]:
        """This kind's entry in the `oneOf` of the schema's `step`."""
        properties = {key: copy.deepcopy(FIELD_SCHEMAS[key]) for key in self.keys}
        properties[self.name] = copy.deepcopy(self.schema)
        return {
            "type": "object",
            "required": [self.name],
            "additionalProperties": False,
            "properties": properties,
            "description": self.description,
        }
