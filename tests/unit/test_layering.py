"""The import layering of design.md 3, checked in one place. Each check runs in a fresh
interpreter and lists which of the forbidden modules got loaded:

- `payorch` is the small package both sides share: it imports nothing heavy;
- `simulator.domain` is pure: no aiohttp, tinydb or typer;
- `simulator` never imports the CLI's libraries (typer, textual, rich), and loads Babel only
  for the first page it renders (start-up time is a tracked figure);
- the CLI's help and its commands that need no server load neither the server (aiohttp,
  tinydb, `simulator.app`) nor Textual, which only `payorch tui` imports;
- the unit of work is the caller's (an HTTP handler, or the scheduler for a job): no domain
  service opens a store batch or is given one (docs/decisions.md, issue 14 item 8);
- no `if TYPE_CHECKING:` import hides an import circle (issue 27): a module that needs the type
  of one that imports it gets what it needs passed, or names it by a small Protocol;
- the house (issue 33): the server's floors import only downwards (the domain, then the store and
  the events, then the HTTP layer, then the app), no module imports another that imports it back
  (at run time, in a function or for the type checker alike), no module imports another's
  private name, the supervisor's side (`simulator.cluster`) is imported by no part of the server,
  and the CLI imports the server's modules only where it already must (a list, each entry with
  its reason). Module size (600 lines) is tests/unit/test_module_size.py's.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from payorch_cli.scenario.fixture import Payorch

SERVER_AND_TUI = ("aiohttp", "tinydb", "simulator.app", "textual")


def loaded(code: str, modules: tuple[str, ...]) -> list[str]:
    """Which of `modules` are imported once `code` has run in a new interpreter."""
    script = f"{code}\nimport sys\nprint(','.join(m for m in {modules!r} if m in sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 0, done.stderr
    return [name for name in done.stdout.strip().split(",") if name]


def every_module_of(package: str) -> str:
    return (
        f"import importlib, pkgutil, {package} as p\n"
        f"for m in pkgutil.walk_packages(p.__path__, '{package}.'): importlib.import_module(m.name)"
    )


def cli(args: list[str]) -> str:
    return (
        "from typer.testing import CliRunner; from payorch_cli.main import app\n"
        f"r = CliRunner().invoke(app, {args!r}); assert r.exit_code == 0, r.output"
    )


def test_the_shared_package_imports_nothing_heavy() -> None:
    heavy = ("aiohttp", "orjson", "typer", "simulator", "payorch_cli")
    assert loaded(every_module_of("payorch"), heavy) == []


def test_the_domain_imports_no_framework() -> None:
    assert loaded(every_module_of("simulator.domain"), ("aiohttp", "tinydb", "typer")) == []


def test_the_simulator_imports_no_cli_library() -> None:
    assert loaded(every_module_of("simulator"), ("typer", "textual", "rich")) == []


def test_the_server_loads_babel_only_when_a_page_is_rendered() -> None:
    # Babel is about 15 ms of imports: the checkout pages import it when they first render.
    server = "import simulator.app, simulator.http.routes, simulator.http.pages.checkout"
    assert loaded(server, ("babel",)) == []


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["clock", "--help"],
        ["simulate", "payment", "--help"],
        ["trigger", "--help"],
        ["scenario", "run", "--help"],
        ["listen", "--help"],
        ["logs", "tail", "--help"],
        ["reset", "--help"],
        ["tui", "--help"],
        ["mcp", "--help"],
        ["keys", "--json"],
        ["openapi"],
    ],
    ids=" ".join,
)
def test_the_cli_loads_no_server_and_no_tui(args: list[str]) -> None:
    assert loaded(cli(args), SERVER_AND_TUI) == []


def test_a_command_against_a_server_loads_no_aiohttp(payorch: Payorch) -> None:
    assert loaded(cli(["--base-url", payorch.base_url, "clock", "show"]), SERVER_AND_TUI) == []


def test_only_payorch_mcp_loads_the_mcp_sdk() -> None:
    # The SDK (starlette, uvicorn, its types...) is 0.6 s of imports: `payorch mcp` alone pays.
    for args in (["--help"], ["mcp", "--help"]):
        assert loaded(cli(args), ("mcp", "starlette", "uvicorn", "payorch_cli.mcp.server")) == []


def test_the_tui_command_module_is_light() -> None:
    assert loaded("import payorch_cli.commands.tui", ("textual", "payorch_cli.tui")) == []


def test_no_domain_service_opens_a_unit_of_work() -> None:
    domain = Path(__file__).resolve().parents[2] / "simulator" / "domain"
    found = []
    for path in sorted(domain.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            named = (isinstance(node, ast.Attribute) and "batch" in node.attr) or (
                isinstance(node, ast.arg) and "batch" in node.arg
            )
            if named:
                found.append(f"{path.relative_to(domain)}:{node.lineno}")
    assert found == [], "the handler (or the scheduler) opens the store batch, not the domain"


ROOT = Path(__file__).resolve().parents[2]


def _imports() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Every first-party module's imports: (made when it runs, made only for the type checker)."""
    files = {}
    for package in ("simulator", "payorch", "payorch_cli"):
        for path in (ROOT / package).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            files[name.removesuffix(".__init__")] = path

    def module_of(name: str) -> str:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name

    runtime: dict[str, set[str]] = {name: set() for name in files}
    typing_only: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        guarded = {
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for inner in ast.walk(node)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            else:
                continue
            for target in filter(None, map(module_of, targets)):
                if target != name:
                    (typing_only if id(node) in guarded else runtime)[name].add(target)
    return runtime, typing_only


def test_no_type_checking_import_closes_an_import_circle() -> None:
    runtime, typing_only = _imports()

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            name = todo.pop()
            if name == goal:
                return True
            if name not in seen:
                seen.add(name)
                todo.extend(runtime.get(name, ()))
        return False

    circles = [
        f"{module} -> {target}"
        for module, targets in typing_only.items()
        for target in sorted(targets)
        if reaches(target, module)
    ]
    assert circles == [], "pass what is needed, or name it by a Protocol"


# The server's floors, lowest first: a module imports its own floor and the ones below. `payorch`
# is shared with the CLI; clock, jsonio and memory are the small kernels the domain may use.
FLOORS: tuple[tuple[str, ...], ...] = (
    ("payorch",),
    ("simulator.clock", "simulator.jsonio", "simulator.memory"),
    ("simulator.domain",),
    (
        "simulator.store",
        "simulator.events",
        "simulator.scheduler",
        "simulator.settings",
        "simulator.fixture_loader",
        "simulator.openapi",
        "simulator.i18n",
        "simulator.team",  # team mode's owners, tokens, audit and limits: plain, on files
    ),
    ("simulator.worlds", "simulator.cluster"),
    ("simulator.http",),
    ("simulator.app",),
    ("payorch_cli",),
)

# What the CLI imports of the server, and why: anything else it reaches over HTTP.
CLI_USES_OF_THE_SERVER = {
    # `payorch serve` runs the server in its process, or the supervisor and nginx (--workers).
    "payorch_cli.commands.serve": {
        "simulator.app",
        "simulator.cluster",
        "simulator.domain.egress",  # --egress-allow/--egress-deny parsed before serving
        "simulator.domain.requestlog",
        "simulator.fixture_loader",
        "simulator.http.keys",
        "simulator.http.openfiles",  # the open-files budget, set before the loop serves
        "simulator.http.shutdown",
        "simulator.settings",
        "simulator.store",
    },
    "payorch_cli.commands.serve_workers": {"simulator.cluster.supervisor"},
    # ...and in team mode makes or reads the admin token in the data dir before serving.
    "payorch_cli.commands.serve_team": {
        "simulator.settings",
        "simulator.team.limits",
        "simulator.team.mode",
        "simulator.team.tokens",
    },
    # `payorch deploy-config` prints the proxy's configuration from the code serve --workers runs.
    "payorch_cli.commands.deploy_config": {"simulator.cluster.nginx_config", "simulator.settings"},
    # The scenario runner and the pytest plugin host an in-process server (`host:`).
    "payorch_cli.scenario.host": {
        "simulator.app",
        "simulator.fixture_loader",
        "simulator.http.keys",
        "simulator.settings",
    },
    # Keys are listed without a server: the fixtures' and a data dir's namespaces'.
    "payorch_cli.commands.keys": {"simulator.fixture_loader"},
    # Their traps are marked by authentication's own standing checks (`payorch keys`).
    "payorch_cli.credentials": {
        "simulator.domain.auth",
        "simulator.domain.namespaces",
        "simulator.fixture_loader",
    },
    "payorch_cli.mcp.catalogue": {"simulator.domain.catalog"},
    # The OpenAPI document is printed and served to agents without a server.
    "payorch_cli.commands.openapi": {"simulator.openapi.document"},
    "payorch_cli.mcp.server": {"simulator.openapi.document"},
    # The default data dir (--data-dir) is the server's.
    "payorch_cli.options": {"simulator.settings"},
    # Tab completes the fixture merchants without a server.
    "payorch_cli.completion": {"simulator.fixture_loader"},
    # The proxy redacts documents into valid synthetic ones (the domain's check digits), and
    # answers its own refusals with the catalogue's codes.
    "payorch_cli.proxy.redact": {"simulator.domain", "simulator.domain.documents"},
    "payorch_cli.proxy.server": {"simulator.domain.errors"},
}


def _floor(module: str) -> int:
    for height, names in enumerate(FLOORS):
        if any(module == name or module.startswith(name + ".") for name in names):
            return height
    raise AssertionError(f"{module} is on no floor of FLOORS: give it one")


def _all_imports() -> dict[str, set[str]]:
    runtime, typing_only = _imports()
    return {name: runtime[name] | typing_only[name] for name in runtime}


def test_no_arrow_goes_up_a_floor() -> None:
    up = [
        f"{module} -> {target}"
        for module, targets in _all_imports().items()
        for target in sorted(targets)
        if _floor(target) > _floor(module)
    ]
    assert up == [], "a lower floor is handed what it needs (or names it by a Protocol)"


def test_no_part_of_the_server_imports_the_supervisor_side() -> None:
    found = [
        f"{module} -> {target}"
        for module, targets in _all_imports().items()
        if module.startswith("simulator.") and not module.startswith("simulator.cluster")
        for target in sorted(targets)
        if target.startswith("simulator.cluster")
    ]
    assert found == [], "a worker's own code belongs in simulator/http"


def test_the_cli_imports_the_server_only_where_it_must() -> None:
    found = {
        module: {target for target in targets if target.startswith("simulator")}
        for module, targets in _all_imports().items()
        if module.startswith("payorch_cli")
    }
    assert {module: uses for module, uses in found.items() if uses} == CLI_USES_OF_THE_SERVER


def test_no_import_circle() -> None:
    graph = _all_imports()
    circles = []
    for start in sorted(graph):
        seen, todo = set(), list(graph[start])
        while todo:
            name = todo.pop()
            if name == start:
                circles.append(start)
                break
            if name not in seen:
                seen.add(name)
                todo.extend(graph.get(name, ()))
    assert circles == [], "these modules reach themselves through their imports"


def _of_a_library(node: ast.Import | ast.ImportFrom, name: str) -> bool:
    module = node.module if isinstance(node, ast.ImportFrom) and node.module else name
    return module.split(".")[0] not in ("simulator", "payorch", "payorch_cli")


def test_no_private_name_of_another_module_is_imported() -> None:
    found = []
    for package in ("simulator", "payorch", "payorch_cli"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module, *(alias.name for alias in node.names)]
                elif isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                else:
                    continue
                # A library's private names are the library's business.
                names = [name for name in names if not _of_a_library(node, name)]
                private = [
                    part
                    for name in names
                    for part in name.split(".")
                    if part.startswith("_") and not part.startswith("__")
                ]
                if private:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {private}")
    assert found == [], "make it public where it lives, or move it to the module that needs it"


# The request middleware answers the errors of a request it runs; every other refusal (a body
# that could not be had, a namespace refused by the front or a sibling worker, a connection
# aiohttp could not parse or had no room for) goes through `refusal_response`/`refusal_bytes`.
ENVELOPE_WRITERS = {"simulator/http/responses.py", "simulator/http/middlewares.py"}


def test_error_refusals_go_through_the_one_helper() -> None:
    """Outside those two modules, no `error_response(...)`, no `ApiError(...).body(...)` turned
    into an answer, and no request id minted by hand (`"req_" + ...`)."""
    found = []
    for path in sorted((ROOT / "simulator" / "http").rglob("*.py")):
        where = path.relative_to(ROOT).as_posix()
        if where in ENVELOPE_WRITERS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute):
                name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
                if name in ("error_response", "body") and (
                    name == "error_response" or _is_api_error(node.func)
                ):
                    found.append(f"{where}:{node.lineno} {name}(...)")
            elif (
                isinstance(node, ast.BinOp)
                and isinstance(node.left, ast.Constant)
                and node.left.value == "req_"
            ):
                found.append(f"{where}:{node.lineno} a request id minted by hand")
    assert found == [], "answer refusals with simulator.http.responses.refusal_response"


def _is_api_error(func: ast.Name | ast.Attribute) -> bool:
    """`ApiError(...).body(...)` or `error.body(...)`: a catalogue error's envelope."""
    if not isinstance(func, ast.Attribute):
        return False
    target = func.value
    if isinstance(target, ast.Call) and isinstance(target.func, ast.Name):
        return target.func.id == "ApiError"
    return isinstance(target, ast.Name) and target.id in ("error", "exc", "refusal")


# A class name defined twice with one meaning: the second refines the first (a subclass).
SAME_MEANING = {"Application": "server.py's refines aiohttp_private.py's (its connections)"}


def _defined_type_names(tree: ast.Module) -> list[str]:
    """The classes of a module (at any depth) and its module-level type aliases: `Name = X[...]`,
    `Name = A | B` or `Name: TypeAlias = ...` with a capitalised name (a constant is all caps)."""
    names = [node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
            aliased = isinstance(value, ast.Subscript) or (
                isinstance(value, ast.BinOp) and isinstance(value.op, ast.BitOr)
            )
        elif isinstance(node, ast.AnnAssign):
            target, aliased = node.target, ast.unparse(node.annotation).endswith("TypeAlias")
        else:
            continue
        capitalised = isinstance(target, ast.Name) and target.id[:1].isupper()
        if aliased and capitalised and not target.id.isupper():
            names.append(target.id)
    return names


def test_one_meaning_per_class_name() -> None:
    """Issue 33: a type's name means one thing across the server (`Answer` was the HTTP answer
    and a provider's reply, `Attempt` an idempotency key's hold and a cascade's try; `Scope` was
    five aliases, one of them of another shape). Classes and module-level type aliases alike."""
    where: dict[str, list[str]] = {}
    for package in ("simulator", "payorch"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for name in _defined_type_names(ast.parse(path.read_text(encoding="utf-8"))):
                where.setdefault(name, []).append(path.relative_to(ROOT).as_posix())
    twice = {name: paths for name, paths in where.items() if len(paths) > 1}
    assert twice.keys() - SAME_MEANING.keys() == set(), {
        name: twice[name] for name in twice.keys() - SAME_MEANING.keys()
    }
