"""pytest plugin (entry point `pytest11: payorch`): scenario files as test items, and the
`payorch` fixture.

Collection rule — a file is collected only when all of these hold, so unrelated YAML (CI configs,
fixtures, OpenAPI documents...) is never touched:
  1. its name ends in .yaml or .yml;
  2. it is inside a directory named `scenarios` (at any depth), or its name ends in
     `.scenario.yaml` / `.scenario.yml`;
  3. it has a top-level `scenario:` key.
One item per scenario, or per matrix cell (`name[cell]`). Each item runs on its own in-process
simulator, so `pytest scenarios/ -n auto` is safe (each xdist worker hosts its own). Options:
`--payorch-base-url URL` runs items and fixtures against a running server instead;
`payorch_scenarios = false` (ini) turns collection off; `-p no:payorch` disables the plugin.

`payorch_namespace` is the `payorch` fixture in a fresh namespace of one server shared by the
whole session (`--payorch-base-url`, else PAYORCH_BASE_URL, else one in-process simulator per
session, or per xdist worker), deleted after the test: parallel tests share a server without
seeing each other's payments, clock, webhooks or request log.

This module is imported by every pytest run in an environment where payorch is installed: it
imports nothing heavy at the top and changes no global state (PyYAML included).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from payorch_cli.scenario.fixture import Payorch
    from payorch_cli.scenario.interpreter import InstanceResult
    from payorch_cli.scenario.model import Instance

SUFFIXES = (".yaml", ".yml")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("payorch", "payorch scenarios")
    group.addoption(
        "--payorch-base-url",
        default=None,
        help="Run payorch scenarios and the `payorch` fixture against this server instead of "
        "a fresh in-process simulator per test.",
    )
    parser.addini(
        "payorch_scenarios", type="bool", default=True, help="Collect payorch scenario files."
    )


def is_scenario_file(path: Path) -> bool:
    if path.suffix not in SUFFIXES:
        return False
    named = path.name.endswith((".scenario.yaml", ".scenario.yml"))
    if not (named or "scenarios" in path.parent.parts):
        return False
    from payorch import bounded
    from payorch_cli.scenario.source import looks_like_scenario

    try:
        return looks_like_scenario(bounded.read_text(path))
    except bounded.TooLargeError:
        return named  # a named scenario file too large to run: collected, to fail with why
    except (OSError, UnicodeDecodeError):
        return False


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if not parent.config.getini("payorch_scenarios") or not is_scenario_file(file_path):
        return None
    return ScenarioFile.from_parent(parent, path=file_path)


_credentials: Any = None


def credentials() -> Any:
    global _credentials
    if _credentials is None:
        from payorch_cli.scenario.credentials import Credentials

        _credentials = Credentials.builtin()
    return _credentials


class ScenarioFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        from payorch_cli.scenario.loader import load_file
        from payorch_cli.scenario.source import ScenarioFileError

        display = self.config.rootpath
        try:
            shown = str(self.path.relative_to(display))
        except ValueError:
            shown = str(self.path)
        try:
            scenario = load_file(self.path, credentials().check, shown)
        except ScenarioFileError as exc:
            raise self.CollectError(str(exc)) from None
        for instance in scenario.instances():
            name = scenario.name + (f"[{instance.cell_id}]" if instance.cell else "")
            item = ScenarioItem.from_parent(self, name=name, instance=instance)
            item.extra_keyword_matches.update(scenario.tags)
            yield item


class ScenarioFailed(Exception):
    def __init__(self, result: InstanceResult) -> None:
        super().__init__(result.instance.title)
        self.result = result


class ScenarioItem(pytest.Item):
    def __init__(self, *, instance: Instance, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.instance = instance

    def runtest(self) -> None:
        from payorch_cli.scenario.reporters import QuietReporter
        from payorch_cli.scenario.suite import needs_isolation, run_instances

        base_url = self.config.getoption("payorch_base_url")
        # A scenario that needs a server of its own gets a fresh namespace of the shared one.
        namespace = "auto" if base_url and needs_isolation(self.instance) else None
        [result], _ = run_instances(
            [self.instance], QuietReporter(), credentials(), base_url, None, namespace=namespace
        )
        if not result.passed:
            raise ScenarioFailed(result)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, ScenarioFailed):
            from payorch_cli.scenario.report import instance_failure_lines

            result = excinfo.value.result
            marks = {"passed": "ok  ", "failed": "FAIL", "skipped": "skip"}
            lines = [f"{marks[s.status]}  {s.step.label}" for s in result.steps]
            return "\n".join([*lines, "", *instance_failure_lines(result)])
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.instance.scenario.loc.line - 1, f"scenario: {self.instance.title}"


@pytest.fixture
def payorch(request: pytest.FixtureRequest) -> Iterator[Payorch]:
    """An isolated simulator for this test: base_url, keys, client, as_(), advance(),
    events.wait_for(), run_scenario(). With --payorch-base-url, that server instead."""
    from payorch_cli.scenario.fixture import Payorch

    handle = Payorch.start(request.config.getoption("payorch_base_url"), credentials())
    try:
        yield handle
    finally:
        handle.close()


@pytest.fixture(scope="session")
def payorch_server(request: pytest.FixtureRequest) -> Iterator[str]:
    """The base URL of the server `payorch_namespace` makes its namespaces on."""
    import os

    base_url = request.config.getoption("payorch_base_url") or os.environ.get("PAYORCH_BASE_URL")
    if base_url:
        yield base_url
        return
    from payorch_cli.scenario.host import host

    simulator = host().start()
    try:
        yield simulator.base_url
    finally:
        simulator.stop()


@pytest.fixture
def payorch_namespace(request: pytest.FixtureRequest, payorch_server: str) -> Iterator[Payorch]:
    """The `payorch` fixture in a fresh namespace of the session's server (`payorch_server`),
    deleted after the test: `.namespace` is its name, `.base_url` ends in `/ns/{name}` and
    `.keys` / `.as_()` name its own keys as the fixtures' are named."""
    from payorch_cli.scenario.fixture import Payorch
    from payorch_cli.scenario.suite import in_namespace

    creds = credentials()
    with in_namespace(payorch_server, creds, creds.default(None), "auto", None) as space:
        handle = Payorch(
            space.base_url, space.credentials, default=space.default, namespace=space.name
        )
        try:
            handle.listen()
            yield handle
        finally:
            handle.close()
