"""`payorch coverage` and `payorch scenario run --coverage`, as a user runs them."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from payorch_cli.main import app
from payorch_cli.render.coverage import merge, unreached
from payorch_cli.scenario.fixture import Payorch

runner = CliRunner()

PAID = """\
    scenario: paid
    steps:
      - create_payment: {amount: 10, paymentMethodId: "1001"}
        save: {tx: transactionId}
      - simulate: {payment: "${tx}", action: paid}
"""
FAILED = """\
    scenario: failed
    steps:
      - create_payment: {amount: 10, paymentMethodId: "1001"}
        save: {tx: transactionId}
      - simulate: {payment: "${tx}", action: failed}
"""


def rows(report: dict[str, Any]) -> dict[str, int]:
    return {r["key"]: r["reached"] for t in report["stateTables"] for r in t["rows"]}


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_coverage_json_and_table(payorch: Payorch) -> None:
    tx = payorch.client.post("/payments", {"amount": 10, "paymentMethodId": "1001"})
    payorch.client.post(f"/payments/{tx['transactionId']}/simulate", {"action": "expired"})
    result = runner.invoke(app, ["coverage", "--json", "--base-url", payorch.base_url])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert rows(report)["simulate.expired"] == 1
    assert rows(report)["simulate.paid"] == 0
    table = runner.invoke(app, ["coverage", "--base-url", payorch.base_url])
    assert table.exit_code == 0, table.output
    assert "payment.failed" in table.stdout
    assert "never" in table.stdout  # rows not reached are named, not left blank
    assert "state rows: " in table.stdout


def test_coverage_refuses_a_production_key(payorch: Payorch) -> None:
    live = payorch.keys.resolve("shp_mazul_tienda/production").key
    assert live is not None
    result = runner.invoke(app, ["coverage", "--base-url", payorch.base_url, "--api-key", live])
    assert result.exit_code == 1
    assert "production_key_refused" in result.stderr


def test_scenario_run_coverage_sums_the_in_process_simulators(tmp_path: Path) -> None:
    write(tmp_path, "paid.yaml", PAID)
    write(tmp_path, "failed.yaml", FAILED)
    result = runner.invoke(app, ["scenario", "run", str(tmp_path), "--coverage", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)["coverage"]
    reached = rows(report)
    assert (reached["transaction.create"], reached["simulate.paid"]) == (2, 1)
    assert reached["simulate.failed"] == 1
    text = runner.invoke(app, ["scenario", "run", str(tmp_path), "--coverage"])
    assert "coverage: state rows: 3/" in text.stdout
    assert "never reached: simulate: completed -> refunded (simulate refunded)" in text.stdout


def test_scenario_run_coverage_against_a_server(tmp_path: Path, payorch: Payorch) -> None:
    write(tmp_path, "paid.yaml", PAID)
    args = ["--base-url", payorch.base_url, "scenario", "run", str(tmp_path), "--coverage"]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    assert rows(json.loads(result.stdout)["coverage"])["simulate.paid"] == 1


def test_merge_sums_counts_and_totals() -> None:
    def report(since: str, paid: int, event: int) -> dict[str, Any]:
        return {
            "since": since,
            "stateTables": [
                {
                    "table": "simulate",
                    "rows": [
                        {"key": "a", "from": "p", "to": "c", "via": "x", "reached": paid},
                        {"key": "b", "from": "p", "to": "f", "via": "y", "reached": 0},
                    ],
                }
            ],
            "events": [{"type": "payment.completed", "reached": event}],
            "errors": [{"code": "invalid_request", "status": 400, "reached": 1}],
            "totals": {},
        }

    merged = merge([report("2026-01-02", 1, 0), report("2026-01-01", 2, 1)])
    assert merged["since"] == "2026-01-01"
    assert rows(merged) == {"a": 3, "b": 0}
    assert merged["events"] == [{"type": "payment.completed", "reached": 1}]
    assert merged["errors"][0]["reached"] == 2
    assert merged["totals"]["stateRows"] == {"reached": 1, "total": 2, "percent": 50.0}
    assert unreached(merged)["stateRows"] == ["simulate: p -> f (y)"]
    assert merge([]) == {}
