"""The repository's scenarios/ run green, as CI and users run them: `payorch scenario run
scenarios/` in a real process (JUnit report included), with one in-process simulator each."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

ROOT = Path(__file__).resolve().parents[2]
PAYORCH = [sys.executable, "-m", "payorch_cli.main"]


def test_every_repository_scenario_passes_and_reaches_every_state_row_and_event_type(
    tmp_path: Path,
) -> None:
    """`payorch scenario run scenarios/ --junit FILE --json --coverage`: every scenario green,
    the JUnit report counts them, and every row of the state tables and every event type is
    reached by some scenario (GET /_sim/coverage summed over their simulators). Error codes are
    reported, not required. One run checks both (the directory costs ~10 s a run; `--coverage`
    only reads each simulator's coverage after its scenario)."""
    junit = tmp_path / "junit.xml"
    result = subprocess.run(
        [*PAYORCH, "scenario", "run", "scenarios/", "--junit", str(junit), "--json", "--coverage"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = json.loads(result.stdout)
    failed = [s["failure"] for s in report["scenarios"] if s["status"] != "passed"]
    assert result.returncode == 0 and not failed, "\n\n".join(failed) or result.stderr
    files = sorted(p.name for p in (ROOT / "scenarios").glob("*.yaml"))
    assert {Path(s["file"]).name for s in report["scenarios"]} == set(files)
    suite = ElementTree.parse(junit).getroot().find("testsuite")
    assert suite is not None and int(suite.get("tests") or 0) == len(report["scenarios"])
    assert_every_row_and_event_reached(report["coverage"])


def test_the_state_tables_are_covered() -> None:
    """One scenario (or matrix cell) per row of the spec's state tables, by file name."""
    names = {p.stem for p in (ROOT / "scenarios").glob("*.yaml")}
    rows = {
        "transaction": [
            "tx_created_pending",
            "tx_provider_confirms",
            "tx_provider_fails",
            "tx_simulate_paid",
            "tx_simulate_failed",
            "tx_simulate_expired",
            "tx_simulate_refunded",
            "tx_simulate_chargeback",
        ],
        "simulate": [
            "simulate_paid",
            "simulate_failed",
            "simulate_expired",
            "simulate_refunded",
            "simulate_chargeback",
        ],
        "checkout session": [
            "checkout_selector_awaiting_method",
            "checkout_select_completes",
            "checkout_one_shot",
        ],
        "payout": [
            "payout_send_processing",
            "payout_send_rejected",
            "payout_production_completes",
            "payout_simulate_completed",
            "payout_simulate_failed",
            "payout_simulate_processing",
        ],
        "deposit account": ["deposit_account_created", "deposit_account_status_fixed"],
        "deadline": ["tx_deadline_expires"],
        "more": [
            "pix_refund",
            "refund_full_after_partial",
            "chargeback_claim",
            "secret_rotation",
            "webhook_retries_replay",
            "reconciliation_slow_payment",
            "fx_presentment",
            "idempotent_retry",
        ],
        # The provider world (issue 15): each behaviour and callback pathology, in production.
        "providers": [
            "provider_failover_outage",
            "provider_outage_window",
            "provider_outage_ended_early",
            "provider_decline_reasons",
            "provider_timeout",
            "provider_no_callback_poll",
            "provider_duplicate_callback",
            "provider_late_callback",
            "provider_seeded_decline_rate",
            "payout_production_rejected_after_processing",
        ],
    }
    missing = [n for table in rows.values() for n in table if n not in names]
    assert not missing, missing


def test_the_shared_server_safe_ones_pass_against_payorch_serve(tmp_path: Path) -> None:
    """Scenarios not tagged `isolated` tolerate other data: run them all against one real
    `payorch serve`, one after the other, as `--base-url` users do."""
    from tests.cli.test_serve import Server

    server = Server(tmp_path / "data")
    try:
        result = subprocess.run(
            [
                *PAYORCH,
                "scenario",
                "run",
                "scenarios/",
                "--base-url",
                server.url,
                "-k",
                "not isolated",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        server.stop()
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr
    assert "0 failed in" in result.stdout and f"against {server.url}" in result.stdout


# Rows no scenario of this branch can reach yet: a production payout failed by its provider
# needs the provider world (wt-providers adds the failure path and its scenario; drop it here
# when it lands, and this test then holds the scenarios to it).
NOT_YET_REACHABLE: set[str] = set()


def assert_every_row_and_event_reached(coverage: dict[str, Any]) -> None:
    never = [
        f"{table['table']}: {row['from']} -> {row['to']} ({row['via']})"
        for table in coverage["stateTables"]
        for row in table["rows"]
        if not row["reached"] and row["key"] not in NOT_YET_REACHABLE
    ]
    assert not never, "state-table rows no scenario reaches:\n" + "\n".join(never)
    silent = [event["type"] for event in coverage["events"] if not event["reached"]]
    assert not silent, f"event types no scenario fires: {silent}"
