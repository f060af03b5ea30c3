"""Reading YAML and JSON that a hostile hand may have written, within bounds.

A 1 KB YAML file of nested aliases ("billion laughs") composes into a small graph whose
expansion is astronomically large: whatever walks it (a validator, a constructor, a dump) runs
for minutes and gigabytes. A deeply nested `[[[[…` exhausts Python's stack. So every YAML file
the tools read goes through `BoundedComposer`, which counts the nodes of the document as if
every alias were expanded and the nesting depth, and refuses past `MAX_NODES` / `MAX_DEPTH` with
the mark (line, column) where the limit was crossed; files are read through `read_text`, which
refuses past `MAX_BYTES` before parsing anything. JSON goes through `json_loads`, which turns a
too-deep document into the ValueError a malformed one gives.

The composer is PyYAML's own (`yaml.composer.Composer`), on top of libyaml's event parser where
PyYAML has it: composing in Python from libyaml's events is as fast as libyaml's composer, and
this is the one place where alias resolution can be counted.
"""

from __future__ import annotations

import json
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer, ComposerError
from yaml.events import AliasEvent

# Far above any hand-written or recorded file (a 1,000-step recording is ~250 KB, ~40,000 nodes,
# depth ~10), far below what takes a validator more than a fraction of a second.
MAX_BYTES = 2 * 1024 * 1024
MAX_NODES = 200_000
MAX_DEPTH = 64

SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class TooLargeError(ValueError):
    """A file over MAX_BYTES, refused before parsing."""


class LimitError(ComposerError):
    """A document over MAX_NODES (aliases expanded) or MAX_DEPTH; a MarkedYAMLError, so callers
    that report YAML errors with their line report this one too."""


class BoundedComposer(Composer):
    """PyYAML's composer, counting expanded nodes and depth. Mix it in first:
    `class Loader(BoundedComposer, SAFE_LOADER)`."""

    _expanded: int
    _depth: int
    _sizes: dict[str, int]

    def __init__(self, stream: Any) -> None:
        # Composer comes first in the MRO of a libyaml loader, whose own __init__ does the work.
        SAFE_LOADER.__init__(self, stream)

    def compose_document(self) -> Any:
        self.anchors: dict[str, Any] = {}
        self._expanded, self._depth, self._sizes = 0, 0, {}
        return super().compose_document()

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if event.__class__ is AliasEvent:
            anchor = event.anchor
            if anchor in self.anchors and anchor not in self._sizes:
                # Inside its own anchor: a value that contains itself, endless to walk.
                raise LimitError(
                    None, None, f"alias *{anchor} is used inside its own anchor", event.start_mark
                )
            # Each use of an alias costs what its anchored node expands to.
            self._count(self._sizes.get(anchor, 1), event)
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise LimitError(None, None, f"nested deeper than {MAX_DEPTH} levels", event.start_mark)
        self._expanded += 1
        if self._expanded > MAX_NODES:
            self._count(0, event)
        before = self._expanded
        node = super().compose_node(parent, index)
        self._depth -= 1
        if event.anchor is not None:
            self._sizes[event.anchor] = self._expanded - before + 1
        return node

    def _count(self, nodes: int, event: Any) -> None:
        self._expanded += nodes
        if self._expanded > MAX_NODES:
            raise LimitError(
                None,
                None,
                f"more than {MAX_NODES:,} values once its aliases are expanded (an alias bomb?)",
                event.start_mark,
            )


class BoundedSafeLoader(BoundedComposer, SAFE_LOADER):
    """yaml.safe_load's loader, bounded."""


def safe_load(text: str) -> Any:
    """yaml.safe_load within the bounds (LimitError, a yaml.YAMLError, past them)."""
    if len(text) > MAX_BYTES:
        raise TooLargeError(f"larger than {MAX_BYTES // (1024 * 1024)} MiB")
    return yaml.load(text, Loader=BoundedSafeLoader)  # a safe loader, bounded


def read_text(path: Path | Traversable, limit: int = MAX_BYTES) -> str:
    """A UTF-8 file's text, refused (TooLargeError) past `limit` bytes without reading it whole;
    OSError and UnicodeDecodeError as Path.read_text gives them."""
    with path.open("rb") as file:
        data = file.read(limit + 1)
    if len(data) > limit:
        raise TooLargeError(
            f"larger than {_size(limit)}: refused before parsing (a scenario or fixture file is "
            "a few KB)"
        )
    return data.decode("utf-8")


def _size(limit: int) -> str:
    return f"{limit // (1024 * 1024)} MiB" if limit >= 1024 * 1024 else f"{limit:,} bytes"


def json_loads(raw: str | bytes) -> Any:
    """json.loads, with a too-deep document a ValueError (Python's decoder raises RecursionError,
    which no `except ValueError` around a parse expects)."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
