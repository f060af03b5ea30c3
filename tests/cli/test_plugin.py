"""The pytest plugin as a user meets it: `pytest -n 2` in a project of their own, with scenario
files, unrelated YAML, a broken scenario and tests using the `payorch` fixture."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from payorch_cli.scenario.pytest_plugin import is_scenario_file

PASSING = """\
    scenario: refund by method
    tags: [refund]
    matrix: {method: ["1001", sbx_card]}
    steps:
      - create_payment: {amount: 30, paymentMethodId: "${method}", documentId: "123456789"}
        save: {tx: transactionId}
      - simulate: {payment: "${tx}", action: paid}
      - expect_event: {type: payment.completed, match: {data: {id: "${tx}"}}}
"""
FAILING = """\
    scenario: wrong status
    steps:
      - create_payment: {amount: 30, paymentMethodId: "1001"}
        expect: {json: {status: completed}}
"""
FIXTURE_TEST = """\
    import pytest

    @pytest.mark.parametrize("n", range(4))
    def test_isolated(payorch, n):
        # Every test gets its own simulator: nothing from the other tests is there.
        assert payorch.client.get("/payments")["pagination"]["total"] == 0
        tx = payorch.client.post("/payments", {"amount": 50, "paymentMethodId": "1001"})
        payorch.client.post(f"/payments/{tx['transactionId']}/simulate", {"action": "paid"})
        event = payorch.events.wait_for("payment.completed", {"data": {"id": tx["transactionId"]}})
        assert event["data"]["status"] == "completed"
        assert payorch.advance("2d")["offsetSeconds"] >= 172800
        other = payorch.as_("shp_fiesta_taquilla")
        assert other.get("/payments")["pagination"]["total"] == 0
"""


def project(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    # Keep the user's project apart from this repository's pytest configuration; leave out
    # plugins this check does not need (hypothesis alone costs 0.6 s per process).
    (tmp_path / "pytest.ini").write_text(f"[pytest]\naddopts = {QUIET}\n")
    return tmp_path


QUIET = "-p no:cacheprovider -p no:hypothesispytest -p no:schemathesis"


def pytest_run(root: Path, *args: str, workers: int = 0) -> subprocess.CompletedProcess[str]:
    parallel = ["-n", str(workers)] if workers else ["-p", "no:xdist"]
    return subprocess.run(
        [sys.executable, "-m", "pytest", *parallel, "-v", "-rf", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_scenarios_and_fixture_tests_run_in_parallel(tmp_path: Path) -> None:
    root = project(
        tmp_path,
        {
            "scenarios/refund.yaml": PASSING,
            "scenarios/wrong.yaml": FAILING,
            "scenarios/config.yaml": "name: not a scenario\n",  # under scenarios/, no key
            "ci/pipeline.yaml": "scenario: also not one (not under scenarios/)\n",
            "checks/smoke.scenario.yaml": PASSING.replace("refund by method", "smoke"),
            "test_fixture.py": FIXTURE_TEST,
        },
    )
    result = pytest_run(root, workers=2)
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert "1 failed, 8 passed" in out, out
    assert "PASSED scenarios/refund.yaml::refund by method[1001]" in out, out
    assert "PASSED scenarios/refund.yaml::refund by method[sbx_card]" in out, out
    assert "PASSED checks/smoke.scenario.yaml::smoke[sbx_card]" in out, out
    assert "config.yaml" not in out and "pipeline.yaml" not in out, out
    assert "[gw0]" in out and "[gw1]" in out, out  # really on two workers
    # The failure report is the scenario's, not a Python traceback.
    assert "FAIL  1. create a payment" in out, out
    assert 'json.status: expected "completed", got "pending"' in out, out
    assert "request: POST http://127.0.0.1:" in out, out
    assert "Traceback" not in out, out
    # -k sees scenario names and tags (the smoke copy is tagged `refund` too).
    selected = pytest_run(root, "-k", "refund")
    assert selected.returncode == 0, selected.stdout
    assert "4 passed, 5 deselected" in selected.stdout, selected.stdout


def test_a_broken_scenario_file_is_a_collection_error_with_its_location(tmp_path: Path) -> None:
    root = project(
        tmp_path,
        {
            "scenarios/bad.yaml": "scenario: x\nsteps:\n  - advance_clock: 3\n"
            "  - advance_clock: later\n"
        },
    )
    result = pytest_run(root)
    assert result.returncode == 2, result.stdout
    assert "ERROR collecting scenarios/bad.yaml" in result.stdout
    assert "scenarios/bad.yaml:4:20: `advance_clock`: not a duration: 'later'" in result.stdout


def test_collection_can_be_turned_off(tmp_path: Path) -> None:
    root = project(tmp_path, {"scenarios/refund.yaml": PASSING})
    (root / "pytest.ini").write_text(f"[pytest]\naddopts = {QUIET}\npayorch_scenarios = false\n")
    result = pytest_run(root)
    assert result.returncode == 5, result.stdout  # no tests collected


@pytest.mark.parametrize(
    ("name", "text", "collected"),
    [
        ("scenarios/a.yaml", "scenario: a\n", True),
        ("deep/scenarios/sub/a.yml", "# c\nscenario: a\n", True),
        ("x/a.scenario.yaml", "scenario: a\n", True),
        ("scenarios/a.yaml", "steps: []\n", False),
        ("x/a.yaml", "scenario: a\n", False),
        ("scenarios/a.json", "scenario: a\n", False),
    ],
)
def test_the_collection_rule(tmp_path: Path, name: str, text: str, collected: bool) -> None:
    path = tmp_path / name
    path.parent.mkdir(parents=True)
    path.write_text(text)
    assert is_scenario_file(path) is collected
