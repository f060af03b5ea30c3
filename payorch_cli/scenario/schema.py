"""scenario.schema.json, the JSON Schema of scenario files, and the parts of it written from code:
the steps (from `steps.REGISTRY`, each kind's `step_schema()`, whose event kinds take their enums
from `payorch.vocabulary.EVENT_TYPES`) and the matcher operators (from `matchers.REGISTRY`, each
operator's `schema`). The rest (the top-level keys, `expected`) is written in the file.

Editors read the file itself (`# yaml-language-server: $schema=...` in every scenario), so it is
written, not assembled when loaded: `python -m payorch_cli.scenario.schema` rewrites it after a
change to a source, and tests/cli/test_scenario.py fails while it is out of date.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from payorch_cli.scenario import SCHEMA_PATH
from payorch_cli.scenario.matchers import REGISTRY as OPERATORS
from payorch_cli.scenario.steps import REGISTRY as STEP_KINDS


def generated(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with its generated parts filled in from their sources (in place)."""
    schema["$defs"]["step"] = {"oneOf": [kind.step_schema() for kind in STEP_KINDS.values()]}
    operators = {name: copy.deepcopy(operator.schema) for name, operator in OPERATORS.items()}
    schema["$defs"]["operators"]["properties"] = operators
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
