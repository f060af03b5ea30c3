"""The GitHub Action (`action.yml`, composite): its metadata checked against GitHub's schema, and
its steps' scripts run here as a runner would run them (RUNNER_TEMP, GITHUB_ENV, GITHUB_OUTPUT,
GITHUB_WORKSPACE), against a real `payorch serve`: start, run a passing and a failing scenario
with JUnit output and annotations on the failing step's line, stop."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ACTION = ROOT / "action"
CHECK_JSONSCHEMA = shutil.which("check-jsonschema") or str(
    Path(sys.executable).with_name("check-jsonschema")
)

PASSING = """\
scenario: ping answers
steps:
  - request: {method: GET, path: /ping}
    expect: {status: 200}
"""
FAILING = """\
scenario: a failing one
steps:
  - request: {method: GET, path: /ping}
    expect: {status: 200}
  - request:
      method: GET
      path: /ping
    expect: {status: 201}
"""


@pytest.mark.parametrize(
    ("schema", "path"),
    [
        ("vendor.github-actions", ROOT / "action.yml"),
        ("vendor.github-workflows", ROOT / "examples" / "github-workflow.yml"),
    ],
)
def test_the_action_and_the_example_workflow_are_valid(schema: str, path: Path) -> None:
    if not Path(CHECK_JSONSCHEMA).exists():
        pytest.skip("check-jsonschema is not installed (pip install '.[test]')")
    done = subprocess.run(
        [CHECK_JSONSCHEMA, "--builtin-schema", schema, str(path)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _runner_env(tmp_path: Path) -> dict[str, str]:
    """What a GitHub runner gives a step, with the venv's `payorch` first on PATH."""
    for name in ("env", "output"):
        (tmp_path / name).write_text("")
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "RUNNER_TEMP": str(tmp_path / "runner"),
        "GITHUB_ENV": str(tmp_path / "env"),
        "GITHUB_OUTPUT": str(tmp_path / "output"),
        "GITHUB_WORKSPACE": str(tmp_path / "repo"),
        "PAYORCH_PORT": "0",
    }
    env.pop("PAYORCH_BASE_URL", None)
    env.pop("PAYORCH_NAMESPACE", None)
    (tmp_path / "runner").mkdir()
    return env


def _exported(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


@pytest.mark.skipif(shutil.which("bash") is None, reason="the action's steps are bash")
def test_the_steps_start_run_annotate_and_stop(tmp_path: Path) -> None:
    env = _runner_env(tmp_path)
    repo = tmp_path / "repo"
    (repo / "scenarios").mkdir(parents=True)
    (repo / "scenarios" / "pass.yaml").write_text(PASSING)
    (repo / "scenarios" / "fail.yaml").write_text(FAILING)

    started = subprocess.run(
        [str(ACTION / "start.sh")], env=env, cwd=repo, capture_output=True, text=True, timeout=120
    )
    pid = int((tmp_path / "runner" / "payorch" / "serve.pid").read_text())
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        exported = _exported(tmp_path / "env")
        assert exported["PAYORCH_BASE_URL"].startswith("http://127.0.0.1:")
        assert exported["PAYORCH_API_KEY"].startswith("sk_test_")
        assert exported["PAYORCH_PUBLISHABLE_KEY"].startswith("pk_test_")
        assert _exported(tmp_path / "output")["base-url"] == exported["PAYORCH_BASE_URL"]

        env_run = {**env, **exported, "PAYORCH_SCENARIOS": "scenarios/", "PAYORCH_JUNIT": "j.xml"}
        ran = subprocess.run(
            [str(ACTION / "run.sh")], env=env_run, cwd=repo, capture_output=True, text=True,
            timeout=300,
        )  # fmt: skip
        assert ran.returncode == 1, ran.stdout + ran.stderr
        errors = [line for line in ran.stdout.splitlines() if line.startswith("::error")]
        assert errors == [
            "::error file=scenarios/fail.yaml,line=5,title=a failing one::"
            "GET /ping: status: expected 201, got 200"
        ]
        assert "1 passed, 1 failed" in ran.stdout
        suite = ET.parse(repo / "j.xml").getroot().find("testsuite")
        assert suite is not None
        assert (suite.get("tests"), suite.get("failures")) == ("2", "1")
        assert _exported(tmp_path / "output")["junit"] == "j.xml"
    finally:
        stopped = subprocess.run(
            [str(ACTION / "stop.sh")], env=env, capture_output=True, text=True, timeout=60
        )
    assert stopped.returncode == 0, stopped.stderr
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@pytest.mark.skipif(shutil.which("bash") is None, reason="the action's steps are bash")
def test_a_server_that_cannot_start_fails_the_step_with_its_log(tmp_path: Path) -> None:
    env = {**_runner_env(tmp_path), "PAYORCH_PORT": "not-a-port"}
    started = subprocess.run(
        [str(ACTION / "start.sh")], env=env, capture_output=True, text=True, timeout=120
    )
    assert started.returncode == 1
    assert "::error title=payorch serve exited::" in started.stdout
