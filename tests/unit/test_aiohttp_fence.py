"""aiohttp's private names are used in one module, simulator/http/aiohttp_private.py, and nowhere
else (issue 32): a release of aiohttp may rename any of them without notice, and one module to
check against each release is a fence that holds; names scattered over the HTTP layer are not.

The check is static (the source is parsed, nothing runs). A use is:
- an import from aiohttp of a name with a leading underscore, or of a name from a module of
  aiohttp's that neither `aiohttp` nor `aiohttp.web` exports (an implementation module's
  helper: `aiohttp.helpers.rfc822_formatted_time`);
- an attribute `x._name` whose name is a private name of aiohttp's own (an attribute its
  classes set or read on `self`, a method or a class attribute with a leading underscore)
  and that the project does not define itself: `request._state`, `site._server`,
  `Application._handle`. A private attribute the project defines on its own classes
  (`self._loop` of a class of ours) is its own business.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import re
import textwrap
from functools import cache
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

ROOT = Path(__file__).resolve().parents[2]
FENCE = ROOT / "simulator" / "http" / "aiohttp_private.py"
CHECKED = ("simulator", "payorch", "payorch_cli", "bench")
# aiohttp's documented modules, whose every public name may be imported from them.
PUBLIC_MODULES = frozenset({"aiohttp", "aiohttp.web", "aiohttp.hdrs", "aiohttp.abc"})
PUBLIC_MODULES |= {"aiohttp.test_utils", "aiohttp.pytest_plugin", "aiohttp.typedefs"}


# A named tuple's API has a leading underscore only to keep clear of its field names: public.
NAMEDTUPLE_API = frozenset({"_fields", "_field_defaults", "_asdict", "_replace", "_make"})


def _private(name: str) -> bool:
    dunder = name.startswith("__") and name.endswith("__")
    return name.startswith("_") and not dunder and name not in NAMEDTUPLE_API


@cache
def aiohttp_private_names() -> frozenset[str]:
    """Every private name aiohttp's own source defines or uses on its objects."""
    spec = importlib.util.find_spec("aiohttp")
    assert spec is not None and spec.submodule_search_locations
    names: set[str] = set()
    for path in Path(next(iter(spec.submodule_search_locations))).glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and _private(node.attr):
                names.add(node.attr)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _private(node.name):
                names.add(node.name)
            elif (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and _private(node.value)
                and node.value.isidentifier()
            ):
                names.add(node.value)  # __slots__ entries, ATTRS
    return frozenset(names)


def _sources() -> list[Path]:
    return sorted(
        path
        for folder in CHECKED
        for path in (ROOT / folder).rglob("*.py")
        if ".venv" not in path.parts
    )


@cache
def project_private_names() -> frozenset[str]:
    """The private attributes the project defines itself: set on `self`, or defined as a method
    or a class attribute, outside the fence."""
    names: set[str] = set()
    for path in _sources():
        if path == FENCE:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                    names.add(node.attr)
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        names.add(item.name)
                    elif isinstance(item, (ast.Assign, ast.AnnAssign)):
                        targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                        names.update(t.id for t in targets if isinstance(t, ast.Name))
    return frozenset(n for n in names if _private(n))


def _public_exports() -> frozenset[str]:
    return frozenset(aiohttp.__all__) | frozenset(web.__all__)


# The aiohttp classes the HTTP layer handles objects of: their private names are flagged on any
# object, even where a class of the project has an attribute of the same name (`_state`,
# `_server`), since a `request._state` or a `site._server` is aiohttp's whatever else shares it.
CORE = (
    web.Application,
    web.BaseRequest,
    web.StreamResponse,
    web.Response,
    web.Server,
    web.RequestHandler,
    web.AppRunner,
    web.TCPSite,
    web.UrlMappingMatchInfo,
    web.UrlDispatcher,
    aiohttp.StreamReader,
)


@cache
def core_private_names() -> frozenset[str]:
    names: set[str] = set()
    for cls in CORE:
        for klass in cls.__mro__:
            if not klass.__module__.startswith("aiohttp"):
                continue
            names.update(n for n in vars(klass) if _private(n))
            names.update(n for n in getattr(klass, "__slots__", ()) if _private(n))
            try:
                tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
            except (OSError, TypeError):
                continue
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Attribute)
                    and _private(node.attr)
                    and isinstance(node.value, ast.Name)
                    and node.value.id == "self"
                ):
                    names.add(node.attr)
    return frozenset(names)


def _base_names(node: ast.ClassDef) -> list[str]:
    return [ast.unparse(base) for base in node.bases]


def _from_aiohttp(tree: ast.Module) -> set[str]:
    """The names a module binds to aiohttp itself or to anything imported from it."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "aiohttp":
            names.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "aiohttp":
                    names.add(alias.asname or alias.name.split(".")[0])
    return names


@cache
def aiohttp_subclasses() -> frozenset[str]:
    """The project's classes that derive from an aiohttp class, by name (the fence's included:
    a subclass of one of its classes is a subclass of aiohttp's)."""
    bases: dict[str, list[str]] = {}
    derived: set[str] = set()
    for path in _sources():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = _from_aiohttp(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                names = _base_names(node)
                bases[node.name] = [n.split(".")[-1] for n in names]
                if any(n.split(".")[0] in imported for n in names):
                    derived.add(node.name)
    grown = True
    while grown:
        grown = False
        for name, its_bases in bases.items():
            if name not in derived and derived.intersection(its_bases):
                derived.add(name)
                grown = True
    return frozenset(derived)


def uses_in(source: str) -> list[tuple[int, str]]:
    """(line, what) for each use of a private aiohttp name in a module's source."""
    tree = ast.parse(source)
    # A private name of aiohttp's that the project also gives its own objects (`_state`,
    # `_size`) counts in a module that imports aiohttp (it handles aiohttp's objects there).
    core = core_private_names() if _from_aiohttp(tree) else frozenset()
    anywhere = (aiohttp_private_names() - project_private_names()) | core
    on_aiohttp_self = aiohttp_private_names() | core_private_names()
    derived = aiohttp_subclasses() | _locally_derived(tree)
    exported = _public_exports()
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST, in_derived: bool) -> None:
        if isinstance(node, ast.ClassDef):
            in_derived = node.name in derived
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "aiohttp":
            module = node.module or ""
            for alias in node.names:
                if _private(alias.name) or (
                    module not in PUBLIC_MODULES and alias.name not in exported
                ):
                    found.append((node.lineno, f"from {module} import {alias.name}"))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("aiohttp.") and alias.name not in PUBLIC_MODULES:
                    found.append((node.lineno, f"import {alias.name}"))
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            on_self = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
            on_super = isinstance(node.value, ast.Call) and ast.unparse(node.value) == "super()"
            if on_self or on_super:
                if in_derived and node.attr in on_aiohttp_self:
                    found.append((node.lineno, f".{node.attr}"))
            elif node.attr in anywhere:
                found.append((node.lineno, f".{node.attr}"))
        elif (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and in_derived
            and node.name in on_aiohttp_self
        ):
            found.append((node.lineno, f"def {node.name}"))  # an override of aiohttp's
        for child in ast.iter_child_nodes(node):
            visit(child, in_derived)

    visit(tree, False)
    return found


def _locally_derived(tree: ast.Module) -> set[str]:
    imported = _from_aiohttp(tree)
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
        and any(n.split(".")[0] in imported for n in _base_names(node))
    }


@pytest.mark.long(9)
def test_no_private_aiohttp_name_outside_the_fence() -> None:
    offences = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for path in _sources()
        if path != FENCE
        for line, what in uses_in(path.read_text(encoding="utf-8"))
    ]
    assert not offences, "private aiohttp names outside aiohttp_private.py:\n" + "\n".join(offences)


def test_the_check_sees_each_kind_of_use() -> None:
    """The check itself: each kind of use it is meant to catch, caught."""
    source = """
from aiohttp.helpers import rfc822_formatted_time
from aiohttp.http_writer import _serialize_headers
import aiohttp.web_protocol
state = request._state
port = site._server.sockets[0]
class Front(web.Application):
    def _make_handler(self): ...
"""
    source = "from aiohttp import web\n" + source
    assert sorted(what for _, what in uses_in(source)) == sorted(
        [
            "from aiohttp.helpers import rfc822_formatted_time",
            "from aiohttp.http_writer import _serialize_headers",
            "import aiohttp.web_protocol",
            "._state",
            "._server",
            "def _make_handler",
        ]
    )


def test_public_names_pass() -> None:
    source = """
from aiohttp import web, hdrs
from aiohttp.web_urldispatcher import UrlMappingMatchInfo
app = web.Application()
request.match_info
runner.addresses
"""
    assert uses_in(source) == []


def test_the_fence_has_a_reason_for_each_name() -> None:
    """Each private name the fence uses is given its reason where it is used: a comment or a
    docstring naming it before a colon (`_state: the dict behind...`, or a list of names
    `_buffer, _eof: ...`) and saying why no public API serves."""
    source = FENCE.read_text(encoding="utf-8")
    used = {what.lstrip(".").split()[-1] for _, what in uses_in(source)}
    assert used, "the fence uses no private name: the check is looking at the wrong file"
    unexplained = sorted(
        name for name in used if re.search(rf"(?<![.\w]){re.escape(name)}[,:]\s", source) is None
    )
    assert not unexplained, f"no reason given for: {unexplained}"
