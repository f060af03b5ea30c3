"""`payorch providers`: list, show, set, incident, reset against a real simulator, and the usage
errors caught before anything is sent."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from payorch_cli.client import ApiError
from payorch_cli.main import app
from payorch_cli.scenario.fixture import Payorch

runner = CliRunner()
DEAD = "http://127.0.0.1:9"  # discard port: nothing listens there


def cli(payorch: Payorch, *args: str) -> Any:
    """Run `payorch --json ARGS` against the simulator; the parsed JSON it printed."""
    result = runner.invoke(app, ["--base-url", payorch.base_url, "--json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def by_id(providers: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {p["id"]: p for p in providers}


def test_the_list_shows_every_provider_and_the_production_only_rule(payorch: Payorch) -> None:
    listed = by_id(cli(payorch, "providers")["data"])
    assert listed["prv_stp_mx"]["kind"] == "payin" and listed["prv_stp_mx"]["rails"] == ["spei"]
    assert any(p["kind"] == "payout" for p in listed.values())
    human = runner.invoke(
        app, ["--base-url", payorch.base_url, "providers"], env={"COLUMNS": "200"}
    )
    assert human.exit_code == 0, human.output
    text = " ".join(human.stdout.split())
    assert "prv_stp_mx payin accept 30s paid spei" in text
    assert "PRODUCTION keys only" in text and "sandbox cascade always accepts" in text
    # The group options hold for its subcommands too.
    shown = runner.invoke(app, ["providers", "--base-url", payorch.base_url, "--json"])
    assert json.loads(shown.stdout)["data"], shown.output


@pytest.mark.parametrize("columns", [80, 100, 120, 200])
def test_the_list_never_breaks_a_word(payorch: Payorch, columns: int) -> None:
    """At 80 columns the table broke ids' neighbours mid-word ("behavio ur", "bank_t ransfe r");
    where its columns do not fit whole, each provider is a block."""
    listed = cli(payorch, "providers")["data"]
    human = runner.invoke(
        app, ["--base-url", payorch.base_url, "providers"], env={"COLUMNS": str(columns)}
    )
    assert human.exit_code == 0, human.output
    words = {word.strip(",│") for word in human.stdout.split()}
    for provider in listed:
        assert provider["id"] in words, (columns, provider["id"])
    # The rails where the widest provider's fit; else the view says where one is in full.
    every_rail = {rail for provider in listed for rail in provider["rails"]}
    assert every_rail <= words if columns == 200 else "payorch providers show ID" in human.stdout
    assert "behaviour now" in human.stdout
    assert max(map(len, human.stdout.splitlines())) <= columns


def test_set_changes_only_what_is_given_and_reset_puts_it_back(payorch: Payorch) -> None:
    before = cli(payorch, "providers", "show", "prv_cardhub")
    changed = cli(
        payorch,
        "providers",
        "set",
        "prv_cardhub",
        "--decline-rate",
        "0.3",
        "--decline-reason",
        "insufficient_funds",
        "--seed",
        "7",
        "--latency",
        "2s",
        "--callback-after",
        "none",
        "--callback-mode",
        "duplicate",
    )
    assert changed["declineRate"] == 0.3 and changed["seed"] == 7
    assert changed["declineReason"] == "insufficient_funds"
    assert changed["latencySeconds"] == 2
    assert changed["callback"]["afterSeconds"] is None
    assert changed["callback"]["mode"] == "duplicate"
    assert changed["behaviour"] == before["behaviour"]  # not given: unchanged
    assert cli(payorch, "providers", "show", "prv_cardhub") == changed  # it is state
    reset = by_id(cli(payorch, "providers", "reset")["data"])
    assert reset["prv_cardhub"]["declineRate"] == before["declineRate"]
    assert reset["prv_cardhub"]["callback"] == before["callback"]


def test_an_incident_ends_when_the_clock_passes_it(payorch: Payorch) -> None:
    incident = cli(payorch, "providers", "incident", "prv_stp_mx", "outage", "--for", "10m")
    assert incident["behaviour"] == "outage" and incident["active"] is True
    provider = cli(payorch, "providers", "show", "prv_stp_mx")
    assert provider["effectiveBehaviour"] == "outage"
    assert [i["id"] for i in provider["incidents"]] == [incident["id"]]
    payorch.advance("11m")
    provider = cli(payorch, "providers", "show", "prv_stp_mx")
    assert provider["effectiveBehaviour"] == provider["behaviour"] == "accept"
    assert not any(i.get("active") for i in provider["incidents"])


def test_a_scheduled_incident_starts_later(payorch: Payorch) -> None:
    human = runner.invoke(
        app,
        [
            "--base-url",
            payorch.base_url,
            "providers",
            "incident",
            "prv_stp_mx",
            "decline",
            "--for",
            "5m",
            "--in",
            "1h",
            "--decline-reason",
            "insufficient_funds",
        ],
    )
    assert human.exit_code == 0, human.output
    assert "prv_stp_mx: decline from " in human.stdout and "(simulated)" in human.stdout
    assert cli(payorch, "providers", "show", "prv_stp_mx")["effectiveBehaviour"] == "accept"
    payorch.advance("61m")
    assert cli(payorch, "providers", "show", "prv_stp_mx")["effectiveBehaviour"] == "decline"


def test_end_ends_one_incident_or_all_of_a_providers(payorch: Payorch) -> None:
    first = cli(payorch, "providers", "incident", "prv_stp_mx", "outage", "--for", "10m")
    later = cli(
        payorch, "providers", "incident", "prv_stp_mx", "outage", "--for", "5m", "--in", "1h"
    )
    ended = cli(payorch, "providers", "end", "prv_stp_mx", first["id"])
    assert ended["id"] == first["id"] and ended["ended"] == "early"
    assert ended["endsAt"] < first["endsAt"] and ended["active"] is False
    provider = cli(payorch, "providers", "show", "prv_stp_mx")
    assert provider["effectiveBehaviour"] == "accept"
    assert [i["id"] for i in provider["incidents"]] == [later["id"]]
    human = runner.invoke(
        app, ["--base-url", payorch.base_url, "providers", "end", "prv_stp_mx"], terminal_width=200
    )
    assert human.exit_code == 0, human.output
    said = " ".join(human.stdout.split())  # wrapped at words at 80 columns
    assert said.startswith("prv_stp_mx: outage cancelled (it was to start at ")
    assert f"(simulated), incident {later['id']}." in said
    assert cli(payorch, "providers", "show", "prv_stp_mx")["incidents"] == []
    # Nothing left: no error, and the human line says so.
    assert cli(payorch, "providers", "end", "prv_stp_mx") == {"data": []}
    again = runner.invoke(app, ["--base-url", payorch.base_url, "providers", "end", "prv_stp_mx"])
    assert again.exit_code == 0 and "nothing to end" in again.stdout


def test_end_says_when_an_active_incident_ended(payorch: Payorch) -> None:
    made = cli(payorch, "providers", "incident", "prv_cardhub", "outage", "--for", "10m")
    human = runner.invoke(
        app, ["--base-url", payorch.base_url, "providers", "end", "prv_cardhub", made["id"]]
    )
    assert human.exit_code == 0, human.output
    said = " ".join(human.stdout.split())  # wrapped at words at 80 columns
    assert said.startswith("prv_cardhub: outage ended at ")
    assert said.endswith(f"(simulated), incident {made['id']}.")


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["providers", "end", "prv_nope"], "provider_not_found"),
        (["providers", "end", "prv_stp_mx", "inc_nope"], "incident_not_found"),
        (["providers", "end", "prv_sandbox"], "invalid_request"),
        (["providers", "show", "prv_nope"], "provider_not_found"),
        (["providers", "set", "prv_nope", "--seed", "1"], "provider_not_found"),
        (["providers", "incident", "prv_nope", "outage", "--for", "1m"], "provider_not_found"),
        # A payout-only behaviour on a pay-in provider: the server names the field.
        (["providers", "set", "prv_stp_mx", "--behaviour", "reject"], "invalid_request"),
    ],
)
def test_server_errors_are_one_line_and_exit_1(
    payorch: Payorch, args: list[str], code: str
) -> None:
    result = runner.invoke(app, ["--base-url", payorch.base_url, *args])
    assert result.exit_code == 1, result.output
    line = result.stderr.strip()
    assert line.startswith(f"payorch {' '.join(args[:2])}: ") and code in line, line
    assert len(line.splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["set", "p", "--decline-rate", "1.5"], "'1.5' is not between 0 and 1"),
        (["set", "p", "--latency", "soon"], "not a duration: 'soon'"),
        (["set", "p", "--behaviour", "outtage"], "(did you mean 'outage'?)"),
        (["incident", "p", "outage", "--for", "-5m"], "not a duration: '-5m'"),
        (["incident", "p", "outage"], "Missing option '--for'"),
        (["set", "p"], "nothing to change"),
    ],
)
def test_usage_errors_exit_2_before_calling_anything(args: list[str], error: str) -> None:
    result = runner.invoke(app, ["--base-url", DEAD, "providers", *args])
    assert result.exit_code == 2, result.output
    assert error in result.stderr, result.stderr


def test_every_help_says_behaviours_are_production_only() -> None:
    for path in ([], ["set"], ["incident"]):
        result = runner.invoke(app, ["providers", *path, "--help"], terminal_width=200)
        assert "PRODUCTION keys only" in result.stdout, path
        assert "sandbox cascade always accepts" in " ".join(result.stdout.split()), path


def test_payorch_reset_puts_the_providers_back_too(payorch: Payorch) -> None:
    cli(payorch, "providers", "set", "prv_stp_mx", "--behaviour", "outage")
    cli(payorch, "providers", "incident", "prv_cardhub", "outage", "--for", "1h")
    result = runner.invoke(app, ["--base-url", payorch.base_url, "reset"])
    assert result.exit_code == 0, result.output
    listed = by_id(cli(payorch, "providers")["data"])
    assert listed["prv_stp_mx"]["behaviour"] == "accept"
    assert listed["prv_cardhub"]["incidents"] == []


def test_show_lists_each_incident_with_the_id_end_asks_for(payorch: Payorch) -> None:
    first = cli(payorch, "providers", "incident", "prv_stp_mx", "outage", "--for", "10m")
    later = cli(
        payorch, "providers", "incident", "prv_stp_mx", "decline", "--for", "5m", "--in", "1h"
    )
    shown = runner.invoke(app, ["--base-url", payorch.base_url, "providers", "show", "prv_stp_mx"])
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    [active] = [line for line in lines if first["id"] in line]
    [scheduled] = [line for line in lines if later["id"] in line]
    # At 80 columns, one line each: the id whole, then what it does; the active one first.
    assert active.split()[:2] == ["incident", first["id"]] and "outage until" in active
    assert scheduled.split()[:2] == ["incident", later["id"]] and "decline" in scheduled
    assert lines.index(active) + 1 == lines.index(scheduled)
    # The id shown is the one `providers end` takes.
    ended = cli(payorch, "providers", "end", "prv_stp_mx", scheduled.split()[1])
    assert ended["id"] == later["id"]
    quiet = runner.invoke(app, ["--base-url", payorch.base_url, "providers", "show", "prv_cardhub"])
    assert any(line.split() == ["incidents", "none"] for line in quiet.stdout.splitlines())


def test_counts_and_reset_say_what_happened_in_words(payorch: Payorch) -> None:
    """`1: 0 ok, 1 down` was a riddle, and reset printed every provider (149 lines)."""
    cli(payorch, "providers", "incident", "prv_stp_mx", "outage", "--for", "10m")
    live = payorch.as_("shp_mazul_tienda/production")
    buyer = {"userName": "Ana López", "userEmail": "ana@example.com", "documentId": "IXLZ9511197B1"}
    with pytest.raises(ApiError, match="cascade_exhausted"):  # SPEI's one provider is down
        live.post("/payments", {"amount": 50, "paymentMethodId": "1001", **buyer})
    shown = runner.invoke(app, ["--base-url", payorch.base_url, "providers", "show", "prv_stp_mx"])
    assert shown.exit_code == 0, shown.output
    [did] = [line.split(None, 1)[1] for line in shown.stdout.splitlines() if " did " in line]
    assert did == "1 charge: 0 accepted, 1 unavailable"
    reset = runner.invoke(app, ["--base-url", payorch.base_url, "providers", "reset"])
    assert reset.exit_code == 0, reset.output
    lines = reset.stdout.splitlines()
    assert len(lines) == 2 and lines[0].startswith("18 providers back as the fixtures define them")
    assert lines[1].endswith("`payorch providers` lists them.")
