"""Scenario files: a YAML language for API journeys against a payorch server (docs/scenarios.md).

Modules: source (YAML with locations), files (reading and finding files), loader (the file
model), checks (what every part's checks share, file:line:column errors), steps/ (the step kinds'
registry: each kind's reading, run and schema), expressions (`${...}`), matchers/, model,
interpreter (runs an instance), results, receiver (hosted webhook endpoint), host (in-process
simulators), suite (many files), reporters, pytest_plugin, schema (writes the generated parts of
scenario.schema.json).
"""

from __future__ import annotations

from pathlib import Path

SCHEMA_PATH = Path(__file__).with_name("scenario.schema.json")
