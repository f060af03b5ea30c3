"""Scenarios tagged `isolated` against a shared server (`--base-url`, `--payorch-base-url`): not
run and failed with plain diffs, but skipped with a sentence that says why and what to do; with
`--namespace auto` (and in the pytest plugin) run in a fresh namespace of their own."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

from typer.testing import CliRunner

from payorch_cli.main import app
from payorch_cli.scenario.fixture import Payorch
from tests.cli.test_plugin import project, pytest_run
from tests.cli.test_scenario import PASSING, write

runner = CliRunner()

# Exact totals: true on a fresh simulator, false on a server that has other data.
EXACT = """\
    scenario: counts from zero
    tags: [isolated]
    steps:
      - request: {method: GET, path: /payments}
        expect: {json: {pagination: {total: 0}}}
"""
ADVICE = (
    "run them without --base-url (a fresh simulator each) or with --namespace auto (a "
    "namespace each)"
)


def shared_server(payorch: Payorch) -> None:
    """A server with someone else's data on it."""
    payorch.client.post("/payments", {"amount": 10, "paymentMethodId": "1001"})


def test_isolated_scenarios_are_skipped_with_the_reason(tmp_path: Path, payorch: Payorch) -> None:
    shared_server(payorch)
    write(tmp_path, "a.yaml", PASSING)
    write(tmp_path, "exact.yaml", EXACT)
    junit = tmp_path / "junit.xml"
    result = runner.invoke(
        app,
        ["--base-url", payorch.base_url, "scenario", "run", str(tmp_path), "--junit", str(junit)],
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[-3].startswith("1 passed, 0 failed, 1 skipped in ")
    assert lines[-2] == (
        "  skipped 1 scenario(s) tagged `isolated`: it checks exact balances or totals, so it "
        f"needs a server of its own (--base-url shares one); {ADVICE}:"
    )
    assert lines[-1].startswith("  skipped: ") and "counts from zero" in lines[-1]
    assert "diff" not in result.stdout
    suite = ElementTree.parse(junit).getroot().find("testsuite")
    assert suite is not None and (suite.get("tests"), suite.get("skipped")) == ("2", "1")
    skipped = suite.find("testcase/skipped")
    assert skipped is not None and ADVICE in skipped.get("message", "")


def test_the_json_report_lists_the_skipped(tmp_path: Path, payorch: Payorch) -> None:
    write(tmp_path, "a.yaml", PASSING)
    write(tmp_path, "exact.yaml", EXACT)
    result = runner.invoke(
        app, ["--base-url", payorch.base_url, "--json", "scenario", "run", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["passed"], report["failed"]) == (1, 0)
    [skipped] = report["skipped"]
    assert "counts from zero" in skipped["scenario"] and ADVICE in skipped["reason"]


def test_only_isolated_scenarios_selected_is_a_usage_error(
    tmp_path: Path, payorch: Payorch
) -> None:
    write(tmp_path, "exact.yaml", EXACT)
    result = runner.invoke(app, ["--base-url", payorch.base_url, "scenario", "run", str(tmp_path)])
    assert result.exit_code == 2 and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line == (
        "payorch scenario run: every selected scenario (1) is tagged `isolated`: it checks exact "
        "balances or totals, so it needs a server of its own, and --base-url shares one; "
        f"{ADVICE}"
    )


def test_without_base_url_isolated_scenarios_run(tmp_path: Path) -> None:
    write(tmp_path, "exact.yaml", EXACT)
    result = runner.invoke(app, ["scenario", "run", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "\n1 passed, 0 failed in " in result.stdout and "skipped" not in result.stdout


def test_the_pytest_plugin_runs_them_in_a_namespace_of_a_shared_server(
    tmp_path: Path, payorch: Payorch
) -> None:
    shared_server(payorch)
    root = project(tmp_path, {"scenarios/exact.yaml": EXACT})
    done = pytest_run(root, "-rs", "--payorch-base-url", payorch.base_url)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout and "skipped" not in done.stdout


def test_namespace_auto_runs_them_against_a_shared_server(tmp_path: Path, payorch: Payorch) -> None:
    shared_server(payorch)
    write(tmp_path, "a.yaml", PASSING)
    write(tmp_path, "exact.yaml", EXACT)
    result = runner.invoke(
        app,
        ["--base-url", payorch.base_url, "scenario", "run", str(tmp_path), "--namespace", "auto"],
    )
    assert result.exit_code == 0, result.output
    assert "\n2 passed, 0 failed in " in result.stdout and "skipped" not in result.stdout
