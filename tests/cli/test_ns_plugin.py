"""The `payorch_namespace` fixture and `payorch scenario run --namespace auto`: many tests and
scenarios on one shared running server, each in a fresh namespace of its own (design.md 1.6)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from payorch_cli.client import Client
from tests.cli.test_ns import run
from tests.cli.test_plugin import QUIET, project
from tests.cli.test_serve import Server

NAMESPACE_TEST = """\
    import pytest

    @pytest.mark.parametrize("n", range(4))
    def test_isolated(payorch_namespace, n):
        ns = payorch_namespace
        assert ns.base_url.endswith("/ns/" + ns.namespace)
        # Every test gets its own namespace of the shared server: nothing of the others here.
        assert ns.client.get("/payments")["pagination"]["total"] == 0
        tx = ns.client.post("/payments", {"amount": 50, "paymentMethodId": "1001"})
        ns.client.post(f"/payments/{tx['transactionId']}/simulate", {"action": "paid"})
        event = ns.events.wait_for("payment.completed", {"data": {"id": tx["transactionId"]}})
        assert event["data"]["status"] == "completed"
        assert ns.advance("2d")["offsetSeconds"] > 172_000
        assert ns.as_("shp_fiesta_taquilla").get("/payments")["pagination"]["total"] == 0
"""


def test_each_test_gets_a_fresh_namespace_of_one_shared_server(
    server: Server, tmp_path: Path
) -> None:
    root = project(tmp_path / "project", {"test_ns.py": NAMESPACE_TEST})
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "-v", "--payorch-base-url", server.url],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTEST_ADDOPTS": QUIET},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 passed" in result.stdout, result.stdout
    client = Client(server.url)
    # Nothing reached default, and every namespace was deleted afterwards.
    assert client.get("/payments")["pagination"]["total"] == 0
    assert [n["name"] for n in client.namespace_call("GET")["data"]] == ["default"]


def test_scenario_run_namespace_auto_against_a_shared_server(server: Server) -> None:
    scenarios = Path(__file__).resolve().parents[2] / "scenarios"
    isolated = [
        str(scenarios / name) for name in ("provider_timeout.yaml", "chargeback_claim.yaml")
    ]
    # Someone else works in default meanwhile: a provider in outage there changes nothing.
    client = Client(server.url)
    client.request("PATCH", "/_sim/providers/prv_stp_mx", {"behaviour": "outage"})
    result = run(
        "scenario", "run", *isolated, "--base-url", server.url, "--namespace", "auto", "--json"
    )
    report = json.loads(result.stdout)
    assert result.returncode == 0, result.stdout + result.stderr
    assert report["failed"] == 0 and report["passed"] >= 2
    assert [n["name"] for n in client.namespace_call("GET")["data"]] == ["default"]
