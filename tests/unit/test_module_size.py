"""No module of the server or the CLI over 600 lines (issue 27): a module that grows past it is
doing more than one job and is split by job, as the store's batch scope was.

No function or method over 60 lines in `simulator/`, `payorch_cli/` and `payorch/` (issue 33):
past a screen, a function does several things that each deserve a name. A function that must
stay longer is in EXCEPTIONS, by "path::qualname", with the reason."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 600
FUNCTION_LIMIT = 60
FUNCTION_PACKAGES = ("simulator", "payorch_cli", "payorch")

EXCEPTIONS: dict[str, str] = {}


def test_no_module_is_over_the_limit() -> None:
    long = {
        str(path.relative_to(ROOT)): lines
        for package in ("simulator", "payorch_cli")
        for path in (ROOT / package).rglob("*.py")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > LIMIT
    }
    assert long == {}, f"split these by job: {long}"


def function_lengths(source: str) -> dict[str, int]:
    """Every function's and method's length in lines, from its `def` to its last line (its
    decorators not counted), by qualified name (`Class.method`, `outer.inner`)."""
    lengths: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = prefix + child.name
                end = child.end_lineno or child.lineno
                lengths[name] = max(lengths.get(name, 0), end - child.lineno + 1)
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return lengths


def long_functions(root: Path = ROOT) -> dict[str, int]:
    return {
        f"{path.relative_to(root).as_posix()}::{name}": lines
        for package in FUNCTION_PACKAGES
        for path in sorted((root / package).rglob("*.py"))
        for name, lines in function_lengths(path.read_text(encoding="utf-8")).items()
        if lines > FUNCTION_LIMIT
    }


def test_no_function_is_over_the_limit() -> None:
    long = {where: lines for where, lines in long_functions().items() if where not in EXCEPTIONS}
    assert long == {}, f"split these into named steps (or say why in EXCEPTIONS): {long}"


def test_every_exception_is_still_needed() -> None:
    """An entry whose function was split (or renamed) goes, so the list stays the truth."""
    long = long_functions()
    stale = sorted(where for where in EXCEPTIONS if where not in long)
    assert stale == [], f"no longer over {FUNCTION_LIMIT} lines: remove from EXCEPTIONS {stale}"


def test_the_rule_measures_from_def_to_the_last_line() -> None:
    source = "class C:\n    @staticmethod\n    def m() -> None:\n" + "".join(
        f"        x{i} = {i}\n" for i in range(FUNCTION_LIMIT - 1)
    )
    assert function_lengths(source) == {"C.m": FUNCTION_LIMIT}
    assert function_lengths(source + "        y = 0\n") == {"C.m": FUNCTION_LIMIT + 1}
