"""Global options (root or command level, flags over the environment), the exit statuses and
their one-line reasons (the CLI's import layering is checked in tests/unit/test_layering.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from payorch_cli.main import app
from payorch_cli.scenario.fixture import Payorch

runner = CliRunner()
DEAD = "http://127.0.0.1:9"  # discard port: nothing listens there


def test_global_options_work_before_and_after_the_command(payorch: Payorch) -> None:
    before = runner.invoke(app, ["--base-url", payorch.base_url, "--json", "clock", "show"])
    after = runner.invoke(app, ["clock", "show", "--base-url", payorch.base_url, "--json"])
    assert before.exit_code == after.exit_code == 0, before.output + after.output
    assert (
        json.loads(before.stdout).keys()
        == json.loads(after.stdout).keys()
        == {
            "now",
            "offsetSeconds",
        }
    )


def test_a_flag_beats_the_environment_and_the_command_beats_the_root(
    payorch: Payorch, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAYORCH_BASE_URL", DEAD)
    assert runner.invoke(app, ["clock", "show"]).exit_code == 3  # the environment is used
    ok = runner.invoke(app, ["--base-url", payorch.base_url, "clock", "show"])
    assert ok.exit_code == 0, ok.output
    both = runner.invoke(app, ["--base-url", DEAD, "clock", "show", "--base-url", payorch.base_url])
    assert both.exit_code == 0, both.output
    monkeypatch.setenv("PAYORCH_BASE_URL", payorch.base_url)
    monkeypatch.setenv("PAYORCH_API_KEY", "sk_live_lvuyxno67qob31r1gq32rfwr")
    live = runner.invoke(app, ["clock", "show"])
    assert live.exit_code == 1 and "production_key_refused: " in live.stderr
    key = runner.invoke(app, ["clock", "show", "--api-key", "sk_test_19g744zrbw5buqxqpxp5w4gj"])
    assert key.exit_code == 0, key.output


def test_an_api_error_is_one_line_with_its_code_and_status_1(payorch: Payorch) -> None:
    result = runner.invoke(
        app, ["--base-url", payorch.base_url, "simulate", "payment", "TXN-NOPE", "paid"]
    )
    assert result.exit_code == 1
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("payorch simulate payment: transaction_not_found: ")
    assert "(request req_" in line


def test_the_error_line_is_the_one_the_readme_documents(payorch: Payorch) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    found = re.search(r"one line on stderr: `([^`]+)`", readme)
    assert found, "the README documents the error line"
    pattern = re.escape(found.group(1))
    for placeholder, regex in (
        ("COMMAND", r"[a-z]+(?: [a-z]+)?"),
        ("code", r"[a-z_]+"),
        ("message", r".+"),
        ("req_…", r"req_[0-9a-f]+"),
    ):
        pattern = pattern.replace(placeholder, regex)
    for args in (
        ["simulate", "payment", "TXN-NOPE", "paid"],
        ["simulate", "payout", "po_nope", "completed"],
        ["clock", "advance", "1s", "--api-key", "sk_test_nope"],
    ):
        result = runner.invoke(app, ["--base-url", payorch.base_url, *args])
        assert result.exit_code == 1, result.output
        [line] = result.stderr.splitlines()
        assert re.fullmatch(pattern, line), (found.group(1), line)


def test_an_unreachable_server_is_one_clear_line_and_status_3() -> None:
    for args in (
        ["clock", "show"],
        ["simulate", "payment", "TXN-1", "paid"],
        ["trigger", "payment.completed"],
    ):
        result = runner.invoke(app, ["--base-url", DEAD, *args])
        assert result.exit_code == 3, (args, result.output)
        [line] = result.stderr.strip().splitlines()
        assert f"cannot reach {DEAD} (connection refused)" in line, line
        assert "payorch serve" in line


def test_listen_takes_the_global_options_too(payorch: Payorch) -> None:
    # A bad URL is refused before listen starts: exit 1, the API's reason on one line.
    result = runner.invoke(
        app, ["--base-url", payorch.base_url, "listen", "--forward-to", "http://example.com/x"]
    )
    assert result.exit_code == 1
    assert result.stderr.startswith("payorch listen: invalid_request: ") and "https" in (
        result.stderr
    )
