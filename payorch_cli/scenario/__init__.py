"""Scenario files: a YAML language for API journeys against a payorch server (docs/scenarios.md).

Modules: source (YAML with locations), loader (checks, file:line:column errors), expressions
(`${...}`), matchers, model, interpreter (runs an instance), receiver (hosted webhook endpoint),
host (in-process simulators), suite (many files), reporters, pytest_plugin, schema (writes the
generated parts of scenario.schema.json).
"""

from __future__ import annotations

from pathlib import Path

SCHEMA_PATH = Path(__file__).with_name("scenario.schema.json")
