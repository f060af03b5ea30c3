"""The loader's inputs: the fixture files' names, where the built-in set and the static icons are
(package data, found through `importlib.resources`, so a non-editable install works), and the
strict YAML reading every file goes through."""

from __future__ import annotations

import re
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import yaml

from payorch import bounded
from payorch.bounded import SAFE_LOADER, BoundedComposer
from simulator.fixture_loader.fields import FixtureError

FX_FILE = "fx.yaml"
PROVIDERS_FILE = "providers.yaml"
METHODS_FILE = "payment_methods.yaml"
MERCHANTS_FILE = "merchants.yaml"
FIXTURE_FILES = (MERCHANTS_FILE, METHODS_FILE, PROVIDERS_FILE, FX_FILE)
# Read after the four above, so their problems are reported first.
PAYOUT_METHODS_FILE = "payout_methods.yaml"

ICON_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*\.svg")


def builtin_fixtures_dir() -> Traversable:
    """The built-in fixture directory, found through the installed package (no source tree)."""
    return resources.files("simulator") / "fixtures"


def _static_resource() -> Traversable:
    # Existence checks go through importlib.resources so they hold for any installed layout.
    return resources.files("simulator") / "static"


def static_dir() -> Path:
    """The package's static directory on disk, for the HTTP layer to serve files from."""
    static = _static_resource()
    # pip installs unpacked, where this is a real Path; a zipped import has no file to serve.
    if not isinstance(static, Path):
        raise RuntimeError("simulator must be installed unpacked to serve static files")
    return static


def has_icon(name: str) -> bool:
    """Whether simulator/static/icons holds this icon file (a fixture's `icon:` names one)."""
    return (_static_resource() / "icons" / name).is_file()


class _StrictLoader(BoundedComposer, SAFE_LOADER):
    """Safe loader that refuses duplicate mapping keys (PyYAML keeps the last one silently),
    and alias bombs, deep nesting (payorch/bounded.py)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def read_yaml(directory: Traversable, name: str, label: str) -> Any:
    source = directory / name
    if not source.is_file():
        raise FixtureError(label, "file", f"missing (expected {name} in {directory})")
    try:
        return yaml.load(bounded.read_text(source), Loader=_StrictLoader)  # a safe loader
    except bounded.TooLargeError as exc:
        raise FixtureError(label, "file", str(exc)) from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "file"
        problem = getattr(exc, "problem", None) or str(exc)
        raise FixtureError(label, where, f"invalid YAML: {problem}") from exc
    except UnicodeDecodeError as exc:
        raise FixtureError(label, "file", "not UTF-8 text") from exc
