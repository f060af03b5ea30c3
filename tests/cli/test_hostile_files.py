"""Files a hostile hand wrote, read by the CLI: a 1 KB YAML alias bomb ("billion laughs"), a
deeply nested document, a value that contains itself, a file far larger than any scenario.
Each is refused with a `file:line` error and exit code 2, by `scenario validate` and `scenario
run` alike, and by the fixture loader behind `payorch keys --fixtures`; before the bounds
(payorch/bounded.py) the bomb ran past 120 s and 3 GiB. How fast: bench/hostile_yaml.py."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from payorch_cli.main import app
from tests.cli.test_record import BUILTIN_FIXTURES

runner = CliRunner()


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    """The classic: each level an anchored list of `width` aliases of the one before."""
    lines = ["a: &a [" + ", ".join(['"lol"'] * width) + "]"]
    previous = "a"
    for name in "bcdefghijklmnop"[: levels - 1]:
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{previous}"] * width) + "]")
        previous = name
    return "\n".join(lines) + f"\nlast: *{previous}\n"


def scenario_bomb() -> str:
    body = alias_bomb().replace("\n", "\n    ").rstrip()
    return (
        "scenario: bomb\nvars:\n    "
        + body
        + "\nsteps:\n  - request: {method: POST, path: /me, body: *i}\n"
    )


HOSTILE = {
    "bomb": (scenario_bomb(), r"expanded \(an alias bomb\?\)"),
    "deep": (
        "scenario: deep\nsteps:\n  - request: {method: POST, path: /me, body: "
        + "[" * 30_000
        + "]" * 30_000
        + "}\n",
        r"nest",
    ),
    "nested just past the bound": (
        "scenario: deep\nsteps:\n  - request: {method: POST, path: /me, body: "
        + "[" * 100
        + "]" * 100
        + "}\n",
        r"nested deeper than 64 levels",
    ),
    "recursive": (
        "scenario: loop\nsteps:\n  - request: {method: POST, path: /me, body: &x [*x]}\n",
        r"alias \*x is used inside its own anchor",
    ),
}


@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_scenario_file_is_refused_with_its_line(
    tmp_path: Path, command: str, name: str
) -> None:
    text, problem = HOSTILE[name]
    path = tmp_path / "hostile.yaml"
    path.write_text(text)
    assert len(scenario_bomb()) < 1024  # the bomb is a 1 KB file
    args = ["scenario", command, str(path)]
    if command == "run":
        args += ["--base-url", "http://127.0.0.1:9"]  # never reached: nothing runs
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert re.search(rf"{re.escape(str(path))}:\d+:\d+: YAML: .*{problem}", result.output), (
        result.output
    )
    assert "Traceback" not in result.output


def test_a_file_past_the_size_limit_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    path.write_text("scenario: huge\n# " + "x" * (3 * 1024 * 1024) + "\nsteps: []\n")
    result = runner.invoke(app, ["scenario", "validate", str(path)])
    assert result.exit_code == 2, result.output
    assert f"{path}:1:1: larger than 2 MiB: refused before parsing" in result.output


def test_a_huge_yaml_file_in_a_directory_is_skipped_with_its_reason(tmp_path: Path) -> None:
    (tmp_path / "huge.yaml").write_text("scenario: huge\n# " + "x" * (3 * 1024 * 1024) + "\n")
    (tmp_path / "ok.yaml").write_text("scenario: ok\nsteps:\n  - advance_clock: 1s\n")
    result = runner.invoke(app, ["scenario", "validate", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "larger than 2 MiB" in result.output


def test_a_fixture_alias_bomb_is_refused_with_its_line(tmp_path: Path) -> None:
    fixtures = tmp_path / "fixtures"
    shutil.copytree(BUILTIN_FIXTURES, fixtures)
    fx = fixtures / "fx.yaml"
    fx.write_text(fx.read_text() + "\n" + alias_bomb())
    result = runner.invoke(app, ["keys", "--fixtures", str(fixtures)])
    assert result.exit_code == 2, result.output
    assert re.search(r"fx\.yaml.*line \d+, column \d+.*alias bomb", result.output), result.output


def test_an_alias_bomb_under_pytest_is_a_collection_error_with_its_line(tmp_path: Path) -> None:
    from tests.cli.test_plugin import project, pytest_run

    root = project(tmp_path, {"scenarios/bomb.yaml": scenario_bomb()})
    result = pytest_run(root)
    assert result.returncode == 2, result.stdout
    assert "ERROR collecting scenarios/bomb.yaml" in result.stdout
    assert re.search(r"scenarios/bomb\.yaml:\d+:\d+: YAML: .*alias bomb", result.stdout)


def test_a_named_scenario_file_too_large_is_collected_to_fail(tmp_path: Path) -> None:
    from payorch_cli.scenario.pytest_plugin import is_scenario_file

    named = tmp_path / "x" / "huge.scenario.yaml"
    named.parent.mkdir()
    named.write_text("scenario: huge\n# " + "x" * (3 * 1024 * 1024) + "\n")
    assert is_scenario_file(named)


def test_serve_refuses_a_fixture_alias_bomb_in_one_line(tmp_path: Path) -> None:
    import subprocess

    from tests.cli.test_serve import PAYORCH

    fixtures = tmp_path / "fixtures"
    shutil.copytree(BUILTIN_FIXTURES, fixtures)
    merchants = fixtures / "merchants.yaml"
    merchants.write_text(merchants.read_text() + "\n" + alias_bomb())
    done = subprocess.run(
        [
            *PAYORCH,
            "serve",
            "--port",
            "0",
            "--data-dir",
            str(tmp_path / "d"),
            "--fixtures",
            str(fixtures),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.startswith("payorch serve: bad fixtures: ")
    assert "alias bomb" in done.stderr and "Traceback" not in done.stderr
