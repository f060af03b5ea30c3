"""scenario.schema.json, the JSON Schema of scenario files, and the parts of it written from code:
the steps (from `steps.REGISTRY`, each kind's `step_schema()`) and the matcher operators (from
`matchers.REGISTRY`, each operator's `schema`). The rest (the top-level keys, `expected`) is written
in the file.

Editors read the file itself (`# yaml-language-server: $schema=...` in every scenario), so it is
written, not assembled when loaded: `python -m payorch_cli.scenario.schema` rewrites it after a
change to a step kind or an operator, and tests/cli/test_scenario.py fails while it is out of date.

The names payorch.vocabulary lists (event types, provider behaviours, callback outcomes and
modes) are not copied into the file: a schema there says `"x-vocabulary": "NAME"`, as the OpenAPI
document's do, and `served()` (what `payorch scenario schema` prints and the MCP server's
`payorch://scenarios/schema` resource gives) fills in its `enum` from the vocabulary when read.
So a new event type or behaviour leaves the file as it is; the loader refuses a name the
vocabulary lacks, with the valid ones and the closest (docs/decisions.md, "The scenario schema
names no vocabulary")."""

from __future__ import annotations

import copy
import json
from typing import Any

from payorch import vocabulary
from payorch_cli.scenario import SCHEMA_PATH


def generated(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with its generated parts filled in from their sources (in place)."""
    from payorch_cli.scenario.matchers import REGISTRY as OPERATORS
    from payorch_cli.scenario.steps import REGISTRY as STEP_KINDS

    schema["$defs"]["step"] = {"oneOf": [kind.step_schema() for kind in STEP_KINDS.values()]}
    operators = {name: copy.deepcopy(operator.schema) for name, operator in OPERATORS.items()}
    schema["$defs"]["operators"]["properties"] = operators
    return schema


def with_vocabulary(node: Any) -> Any:
    """`node` with the `enum` of every schema marked `x-vocabulary: NAME` filled in from that list
    of payorch.vocabulary, and the mark taken out (in place)."""
    if isinstance(node, dict):
        for value in node.values():
            with_vocabulary(value)
        if "x-vocabulary" in node:
            name = node.pop("x-vocabulary")
            values = getattr(vocabulary, name, None)
            if not isinstance(values, tuple) or not name.isupper():
                raise ValueError(f"x-vocabulary: {name!r} is not a list of payorch.vocabulary")
            node["enum"] = list(values)
    elif isinstance(node, list):
        for value in node:
            with_vocabulary(value)
    return node


def served() -> dict[str, Any]:
    """The schema as users and tools get it: the file, with the vocabulary's enums."""
    schema: dict[str, Any] = with_vocabulary(json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))
    return schema


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2) + "\n"


def current_text() -> str:
    """What scenario.schema.json should hold."""
    return render(generated(json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))))


def main() -> None:
    SCHEMA_PATH.write_text(current_text(), encoding="utf-8")
    print(f"wrote {SCHEMA_PATH}")


if __name__ == "__main__":
    main()
