"""YAML with locations: every value of a scenario file knows its file, line and column.

PyYAML's composer keeps a mark on every node, so the loader validates nodes (not plain dicts) and
each error can point at the exact spot. The loader class is our own subclass: the global
SafeLoader is never modified (a pytest plugin that patches PyYAML breaks other people's test
suites, as Tavern's did). It resolves scalars by YAML 1.2 rules: only true/false are booleans (no
`yes`/`no`/`on`/`off` surprises), no dates, and digits with a leading zero stay strings, so a CLABE
like 012180001183597198 keeps its zero.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import yaml

from payorch.bounded import MAX_BYTES, SAFE_LOADER, BoundedComposer

BOOL = "tag:yaml.org,2002:bool"
INT = "tag:yaml.org,2002:int"
FLOAT = "tag:yaml.org,2002:float"
TIMESTAMP = "tag:yaml.org,2002:timestamp"
STR = "tag:yaml.org,2002:str"


# libyaml's parser where PyYAML has it (a 1,000-step file composes in a tenth of the time), with
# the pure-Python one's resolver rules: both ask the Python resolver for each scalar's tag. The
# composer is the bounded one: aliases expanded and nesting are counted (payorch/bounded.py).
class _Loader(BoundedComposer, SAFE_LOADER):
    yaml_implicit_resolvers: ClassVar[dict[Any, list[Any]]] = {
        first: [r for r in resolvers if r[0] not in (BOOL, INT, FLOAT, TIMESTAMP)]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }


_Loader.add_implicit_resolver(
    BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
_Loader.add_implicit_resolver(INT, re.compile(r"^[-+]?(?:0|[1-9][0-9]*)$"), list("-+0123456789"))
_Loader.add_implicit_resolver(
    FLOAT,
    re.compile(
        r"^(?:[-+]?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)"
        r"|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)


@dataclass(frozen=True, slots=True)
class Loc:
    file: str
    line: int  # 1-based
    column: int  # 1-based

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


class ScenarioError(Exception):
    """One problem in a scenario file, at a location."""

    def __init__(self, loc: Loc, message: str) -> None:
        super().__init__(f"{loc}: {message}")
        self.loc = loc
        self.message = message


class ScenarioFileError(Exception):
    """A file that cannot run: every problem found, in file order."""

    def __init__(self, errors: list[ScenarioError]) -> None:
        self.errors = sorted(errors, key=lambda e: (e.loc.file, e.loc.line, e.loc.column))
        super().__init__("\n".join(str(e) for e in self.errors))


class Node:
    """A composed YAML node and its location; Python values are built on demand."""

    __slots__ = ("_loader", "file", "raw")

    def __init__(self, raw: yaml.Node, file: str, loader: _Loader) -> None:
        self.raw = raw
        self.file = file
        self._loader = loader

    @property
    def loc(self) -> Loc:
        mark = self.raw.start_mark
        return Loc(self.file, mark.line + 1, mark.column + 1)

    @property
    def is_map(self) -> bool:
        return isinstance(self.raw, yaml.MappingNode)

    @property
    def is_seq(self) -> bool:
        return isinstance(self.raw, yaml.SequenceNode)

    @property
    def is_scalar(self) -> bool:
        return isinstance(self.raw, yaml.ScalarNode)

    @property
    def is_null(self) -> bool:
        return self.is_scalar and self.raw.tag == "tag:yaml.org,2002:null"

    @property
    def kind(self) -> str:
        """For messages: mapping, list, string, number, boolean or null."""
        if self.is_map:
            return "mapping"
        if self.is_seq:
            return "list"
        return {
            STR: "string",
            INT: "number",
            FLOAT: "number",
            BOOL: "boolean",
            "tag:yaml.org,2002:null": "null",
        }.get(self.raw.tag, self.raw.tag)

    def _wrap(self, raw: yaml.Node) -> Node:
        return Node(raw, self.file, self._loader)

    def entries(self) -> Iterator[tuple[str, Node, Node]]:
        """(key, key node, value node) of a mapping; `<<` merges applied. Callers check
        is_map first; non-string and duplicate keys raise ScenarioError."""
        self._loader.flatten_mapping(self.raw)
        seen: dict[str, Loc] = {}
        for key_raw, value_raw in self.raw.value:
            key_node = self._wrap(key_raw)
            if not (key_node.is_scalar and key_raw.tag in (STR, INT)):
                raise ScenarioError(key_node.loc, f"a key must be a string, not a {key_node.kind}")
            key = str(key_raw.value)
            if key in seen:
                raise ScenarioError(
                    key_node.loc, f"duplicate key `{key}` (first at line {seen[key].line})"
                )
            seen[key] = key_node.loc
            yield key, key_node, self._wrap(value_raw)

    def items(self) -> list[Node]:
        return [self._wrap(raw) for raw in self.raw.value]

    def value(self) -> Any:
        try:
            return self._loader.construct_object(self.raw, deep=True)
        except yaml.MarkedYAMLError as exc:
            raise ScenarioError(_mark_loc(self.file, exc) or self.loc, _problem(exc)) from None


def _mark_loc(file: str, exc: yaml.MarkedYAMLError) -> Loc | None:
    mark = exc.problem_mark or exc.context_mark
    return Loc(file, mark.line + 1, mark.column + 1) if mark else None


def _problem(exc: yaml.MarkedYAMLError) -> str:
    parts = [p for p in (exc.context, exc.problem) if p]
    return "YAML: " + ", ".join(parts) if parts else "YAML syntax error"


def compose(text: str, file: str) -> Node:
    """The single document of `text` as a Node; syntax errors, and a document past the bounds
    of payorch/bounded.py, as ScenarioError."""
    if len(text) > MAX_BYTES:
        raise ScenarioError(
            Loc(file, 1, 1), f"larger than {MAX_BYTES // (1024 * 1024)} MiB: refused unparsed"
        )
    loader = _Loader(text)
    try:
        raw = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        loc = _mark_loc(file, exc) or Loc(file, 1, 1)
        message = _problem(exc)
        lines = text.splitlines()
        if 0 < loc.line <= len(lines) and "${" in lines[loc.line - 1]:
            message += ' (inside {…} or […], quote a value holding ${…}: "${tx}")'
        raise ScenarioError(loc, message) from None
    except yaml.YAMLError as exc:
        raise ScenarioError(Loc(file, 1, 1), f"YAML: {exc}") from None
    if raw is None:
        raise ScenarioError(
            Loc(file, 1, 1), "the file is empty; a scenario needs `scenario:` and `steps:`"
        )
    return Node(raw, file, loader)


_TOP_KEY = re.compile(r"^scenario\s*:", re.MULTILINE)


def looks_like_scenario(text: str) -> bool:
    """Cheap test without parsing: a top-level `scenario:` key (used to skip other YAML)."""
    return bool(_TOP_KEY.search(text))
