"""Errors in the CLI's words: the API's field and route names become the flags and commands a
CLI user has, and a bad argument is exit 2 everywhere (issue 36 item 7)."""

from __future__ import annotations

from typer.testing import CliRunner

from payorch_cli.main import app
from payorch_cli.scenario.fixture import Payorch

runner = CliRunner()


def test_a_refusal_names_the_flag_and_the_command_not_the_api(payorch: Payorch) -> None:
    base = ["--base-url", payorch.base_url]
    assert runner.invoke(app, [*base, "state", "save", "twice"]).exit_code == 0
    again = runner.invoke(app, [*base, "state", "save", "twice"])
    assert again.exit_code == 1
    assert "add --overwrite" in again.stderr and "overwrite: true" not in again.stderr
    unknown = runner.invoke(app, [*base, "providers", "set", "prv_nope", "--behaviour", "outage"])
    assert unknown.exit_code == 1
    assert "`payorch providers` lists them" in unknown.stderr and "GET /_sim" not in unknown.stderr


def test_bad_arguments_are_exit_2_before_anything_is_sent() -> None:
    bad_name = runner.invoke(app, ["--base-url", "http://127.0.0.1:9", "state", "save", "../x"])
    assert bad_name.exit_code == 2 and "not starting with a dot" in bad_name.stderr
    bad_url = runner.invoke(app, ["--base-url", "htp:/x", "balance"])
    assert bad_url.exit_code == 2 and "Not an http(s) URL: htp:/x" in bad_url.stderr
    dead = runner.invoke(app, ["--base-url", "http://127.0.0.1:9", "balance"])
    assert dead.exit_code == 3  # a well-formed URL where nothing answers: worth retrying


def test_a_malformed_base_url_is_exit_2_in_the_commands_that_probe_first() -> None:
    """`scenario run` and `mcp` probe the server before anything else: a malformed --base-url
    was a dead server there (exit 3), and `payorch mcp` has a --base-url of its own."""
    for args in (
        ["--base-url", "htp:/x", "scenario", "run", "scenarios/idempotent_retry.yaml"],
        ["scenario", "run", "scenarios/idempotent_retry.yaml", "--base-url", "ftp://x"],
        ["mcp", "--base-url", "http://"],
        ["--base-url", "127.0.0.1:8080", "clock", "show"],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert (
            "Not an http(s) URL" in result.stderr and "e.g. http://127.0.0.1:8080" in result.stderr
        )
