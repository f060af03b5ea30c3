"""Scenario files -> Scenario objects, or every problem with its file:line:column.

Everything that can be known before a request is sent is checked here: unknown keys (with a
"did you mean"), types, durations, matchers and regular expressions, event names, credential
names, and every `${name}` against what is defined before that step (vars, the matrix, values
saved by earlier steps, built-ins). A file with problems never starts running.

This module reads the file model (its top-level keys, vars, matrix and the list of steps); the
parts live by job: source.py (YAML with positions, bounded), files.py (reading and finding
files), checks.py (the checks every part shares), steps/ (one kind per step, in a registry:
reading, running and schema), expressions.py and matchers/.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from payorch_cli.scenario.checks import IDENTIFIER, CredentialCheck
from payorch_cli.scenario.expressions import roots
from payorch_cli.scenario.files import discover, read_text
from payorch_cli.scenario.model import BUILTINS, Scenario, matrix_cells
from payorch_cli.scenario.source import Node, ScenarioError, ScenarioFileError, compose
from payorch_cli.scenario.steps import KINDS, REGISTRY
from payorch_cli.scenario.steps.parse import parse_step
from payorch_cli.scenario.steps.reading import StepChecker, step_roots

TOP_KEYS = ("scenario", "description", "tags", "as", "vars", "matrix", "steps")


class _Loader(StepChecker):
    """The file model: its top-level keys, vars, matrix and steps in order."""

    def __init__(self, file: str, check_credential: CredentialCheck | None) -> None:
        super().__init__(file, check_credential)
        self._mentions_receiver = False  # a ${receiver...} anywhere makes the runner host one

    def scenario(self, root: Node) -> Scenario | None:
        entries = self.mapping(root, "a scenario file")
        if entries is None:
            return None
        top = self.keys(entries, TOP_KEYS, "the scenario")
        if "scenario" not in top:
            self.error(root.loc, "missing `scenario:` (the scenario's name)")
        if "steps" not in top:
            self.error(root.loc, "missing `steps:` (a list of steps)")
        name = self.string(top["scenario"], "`scenario`") if "scenario" in top else None
        scenario = Scenario(name or "?", self.file, root.loc, [])
        if "description" in top:
            scenario.description = self.string(top["description"], "`description`") or ""
        if "tags" in top:
            tags = top["tags"].value() if top["tags"].is_seq else None
            if not (isinstance(tags, list) and all(isinstance(t, str) for t in tags)):
                self.error(top["tags"].loc, "`tags` must be a list of strings")
            else:
                scenario.tags = tags
        defined: set[str] = set()
        if "matrix" in top:
            scenario.matrix = self.matrix(top["matrix"])
            defined |= set().union(set(), *(cell.keys() for cell in scenario.matrix))
        if "vars" in top:
            scenario.vars = self.vars(top["vars"], defined)
            defined |= set(scenario.vars)
        if "as" in top:
            scenario.as_ = self.template(top["as"], "`as`")
            self.names(roots(scenario.as_), top["as"].loc, defined, "in `as`")
            self.credential(top["as"], scenario.as_)
        if "steps" in top:
            node = top["steps"]
            if not node.is_seq or not node.items():
                self.error(node.loc, "`steps` must be a non-empty list of steps")
            else:
                for index, item in enumerate(node.items(), 1):
                    step = parse_step(self, item, index, defined)
                    if step is not None:
                        scenario.steps.append(step)
                        defined |= {rule.name for rule in step.save}
                        if "receiver" in step_roots(step):
                            self._mentions_receiver = True
        scenario.uses_receiver = (
            any(REGISTRY[s.kind].listens for s in scenario.steps) or self._mentions_receiver
        )
        return scenario

    def matrix(self, node: Node) -> list[dict[str, Any]]:
        if node.is_seq:
            cells: list[dict[str, Any]] = []
            keys: list[str] | None = None
            for item in node.items():
                value = item.value() if item.is_map else None
                if not isinstance(value, dict) or not value:
                    self.error(item.loc, "a matrix cell must be a mapping of name: value")
                    continue
                if keys is not None and list(value) != keys:
                    names = ", ".join(keys)
                    self.error(item.loc, f"every matrix cell needs the same names ({names})")
                keys = keys or list(value)
                cells.append(value)
            self._matrix_names(node, cells[0] if cells else {})
            return cells
        entries = self.mapping(node, "`matrix`")
        if entries is None:
            return []
        axes: dict[str, list[Any]] = {}
        for key, _, value in entries:
            items = value.value() if value.is_seq else None
            if not isinstance(items, list) or not items:
                self.error(value.loc, f"matrix `{key}` must be a non-empty list of values")
                continue
            if any(isinstance(i, dict | list) for i in items):
                self.error(
                    value.loc,
                    f"matrix `{key}` values must be scalars (a list of "
                    "mappings under `matrix:` lists whole cells)",
                )
                continue
            axes[key] = items
        self._matrix_names(node, axes)
        return matrix_cells(axes) if axes else []

    def _matrix_names(self, node: Node, names: Iterable[str]) -> None:
        for name in names:
            if not IDENTIFIER.match(name) or name in BUILTINS:
                self.error(
                    node.loc,
                    f"matrix name `{name}` must be an identifier, not a "
                    f"built-in ({', '.join(BUILTINS)})",
                )

    def vars(self, node: Node, defined: set[str]) -> dict[str, Any]:
        entries = self.mapping(node, "`vars`")
        out: dict[str, Any] = {}
        for key, key_node, value in entries or []:
            if not IDENTIFIER.match(key) or key in BUILTINS:
                self.error(key_node.loc, f"var `{key}` must be an identifier, not a built-in")
                continue
            compiled = self.compiled(value)
            self.names(roots(compiled), value.loc, defined | set(out), f"in var `{key}`")
            out[key] = compiled
        return out


def load_text(text: str, file: str, check_credential: CredentialCheck | None = None) -> Scenario:
    """Parse and check one scenario file's text. Raises ScenarioFileError."""
    try:
        root = compose(text, file)
    except ScenarioError as exc:
        raise ScenarioFileError([exc]) from None
    loader = _Loader(file, check_credential)
    try:
        scenario = loader.scenario(root)
    except ScenarioError as exc:
        loader.errors.append(exc)
        scenario = None
    if loader.errors or scenario is None:
        raise ScenarioFileError(loader.errors)
    return scenario


def load_file(
    path: Path, check_credential: CredentialCheck | None = None, display: str | None = None
) -> Scenario:
    name = display or str(path)
    return load_text(read_text(path, name), name, check_credential)


__all__ = ["KINDS", "discover", "load_file", "load_text"]
