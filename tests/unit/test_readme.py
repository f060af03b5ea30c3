"""What the README tells a new user, checked against the code: the steps a fresh clone needs (the
second shell's virtualenv, the browser tests' chromium, the deposit account that `simulate
deposit` needs) work as written."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from payorch_cli.main import app
from payorch_cli.scenario.fixture import Payorch
from tests.browser.conftest import MISSING_CHROMIUM, MISSING_PLAYWRIGHT

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    found = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## )", README, re.M | re.S)
    assert found, f"no section {title!r}"
    return found.group(1)


def test_the_second_shell_is_told_to_activate_the_virtualenv() -> None:
    quick = section("Quick start")
    after = quick[quick.index("in another shell") :]
    assert ". .venv/bin/activate" in after.split("```")[0]


def test_the_browser_tests_name_chromium_and_how_to_install_it() -> None:
    quick = section("Quick start")
    # What .ci/run installs besides the venv, each `apt-get install` after an `apt-get update`.
    assert "`apt-get update\n&& apt-get install -y chromium nginx-light php-cli`" in quick
    assert "@modelcontextprotocol/inspector@" in quick
    for readme_install in re.finditer(r"apt-get\s+install", README):
        before = README[max(0, readme_install.start() - 40) : readme_install.start()]
        assert "apt-get update" in before, README[readme_install.start() - 80 :][:160]
    assert "apt-get install chromium" in MISSING_CHROMIUM
    assert "pip install" in MISSING_PLAYWRIGHT


def test_running_against_a_shared_server_names_the_isolated_tag() -> None:
    text = section("Scenarios and CLI")
    assert '--base-url URL -k "not isolated"' in text and "`isolated`" in text


def test_refunds_and_limits_say_they_are_in_local_currency() -> None:
    simulates = " ".join(section("What it simulates").split())
    assert "A refund's `amount` is in the payment's local currency" in simulates
    assert "per-method limits (in the method's local currency" in simulates


def test_a_not_simulated_list_stands_beside_what_it_simulates() -> None:
    assert README.index("## What it simulates") < README.index("## Not simulated")
    assert section("Not simulated").count("\n- ") >= 5


def test_the_deposit_account_call_works_as_written(payorch: Payorch) -> None:
    text = section("Scenarios and CLI")
    call = text[text.index("curl -s http://127.0.0.1:8080/api/v1/me/deposit-accounts") :]
    body = json.loads(re.search(r"-d '(.*?)'", call, re.S).group(1))  # type: ignore[union-attr]  # the README's call has a -d body (None fails the test)
    created = payorch.client.post("/me/deposit-accounts", body)
    assert created["created"] is True
    clabe = created["account"]["clabe"]
    assert "$ payorch simulate deposit --clabe $CLABE --amount 500" in text
    assert clabe.startswith("6461")
    deposit = ["simulate", "deposit", "--clabe", clabe, "--amount", "500"]
    result = CliRunner().invoke(app, ["--base-url", payorch.base_url, "--json", *deposit])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["transaction"]["amountLocal"] == 500


def test_rehearsing_provider_failures_works_as_written(payorch: Payorch, tmp_path: Path) -> None:
    """Every `payorch providers` / `clock` command of the section runs against a simulator, and
    its scenario passes."""
    import shlex

    text = section("Rehearsing provider failures")
    assert "production keys only" in text and "sandbox" in text
    commands = [
        line.removeprefix("$ ").split("#")[0].strip()
        for line in text.split("```console")[1].split("```")[0].splitlines()
        if line.startswith("$ payorch ")
    ]
    assert len(commands) >= 8
    runner = CliRunner()
    for command in commands:
        args = shlex.split(command)[1:]
        result = runner.invoke(app, ["--base-url", payorch.base_url, *args])
        assert result.exit_code == 0, (command, result.output)
    listed = payorch.client.get("/_sim/providers/prv_stp_mx")
    assert listed["behaviour"] == "accept" and listed["incidents"] == []  # reset at the end
    scenario = tmp_path / "readme.yaml"
    scenario.write_text(text.split("```yaml")[1].split("```")[0], encoding="utf-8")
    payorch.run_scenario(scenario)


def test_the_landing_page_is_in_the_serve_section() -> None:
    serve = " ".join(section("`payorch serve`").split())
    assert "a landing page at `/`" in serve and "`Accept: application/json`" in serve


def test_the_check_command_says_how_long_it_takes_and_that_skips_are_explained() -> None:
    quick = " ".join(section("Quick start").split())
    assert (
        "On an idle 2-core machine the tests (`pytest -n 4`, about 3,200 of them) take about 10"
        in quick
    )
    assert "`make check` runs pytest with `-rs`" in quick


def test_payment_captured_is_said_to_be_sandbox_only() -> None:
    simulates = " ".join(section("What it simulates").split())
    assert "`payment.captured` is sandbox-only" in simulates
    assert "only the sandbox simulator emits it" in simulates
