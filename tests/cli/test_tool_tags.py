"""payorch's own requests stay out of what the user records and covers (issue 23, item 9): after
the TUI's polling and one payment of the user's, `payorch record --since 10s` writes the user's
step only; the scenario runner's probe is in neither the log nor coverage."""

from __future__ import annotations

import contextlib
import json
import urllib.request
from typing import Any

import yaml

from payorch_cli.client import ApiError
from payorch_cli.scenario.suite import check_reachable
from payorch_cli.tui.backend import Backend
from tests.cli.test_record import Serve, payorch, server  # noqa: F401 (the fixture)
from tests.cli.test_serve import SANDBOX_SK


def log_of(serve: Serve, query: str = "") -> list[dict[str, Any]]:
    request = urllib.request.Request(
        f"{serve.url}/_sim/requests?limit=100{query}",
        headers={"Authorization": f"Bearer {SANDBOX_SK}"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return list(json.loads(response.read())["data"])


def test_record_writes_the_users_step_not_the_tuis_polling(server: Serve) -> None:  # noqa: F811
    backend = Backend(server.url, SANDBOX_SK)
    try:
        for _ in range(5):  # what the TUI's screens ask every second or so
            backend.payments()
            backend.balance()
            backend.webhooks()
            backend.clock()
            backend.requests()
        server.curl("POST", "/api/v1/payments", {"amount": 50, "paymentMethodId": "1001"})
        backend.payments()
    finally:
        backend.close()
    recorded = payorch("record", "--base-url", server.url, "--since", "10s")
    assert recorded.returncode == 0, recorded.stderr
    steps = yaml.safe_load(recorded.stdout)["steps"]
    assert [(s["request"]["method"], s["request"]["path"]) for s in steps] == [
        ("POST", "/payments")
    ]
    assert recorded.stderr.startswith("Recorded 1 request as 1 step")
    everything = payorch("record", "--base-url", server.url, "--since", "10s", "--include-tools")
    assert everything.returncode == 0, everything.stderr
    assert len(yaml.safe_load(everything.stdout)["steps"]) > 10  # the polling too


def test_the_scenario_runners_probe_is_in_neither_the_log_nor_coverage(
    server: Serve,  # noqa: F811
) -> None:
    assert check_reachable(server.url) is None
    assert log_of(server) == [] and log_of(server, "&includeTools=true") == []
    covered = payorch("coverage", "--base-url", server.url, "--api-key", SANDBOX_SK, "--json")
    assert covered.returncode == 0, covered.stderr
    report = json.loads(covered.stdout)
    assert sum(e["reached"] for e in report["errors"]) == 0
    # A tool's own error (the TUI opening a payment that is not there): with --include-tools only.
    backend = Backend(server.url, SANDBOX_SK)
    with contextlib.suppress(ApiError):
        backend.payment("TXN-nope")
    backend.close()

    def not_found(*extra: str) -> int:
        done = payorch(
            "coverage", "--base-url", server.url, "--api-key", SANDBOX_SK, "--json", *extra
        )
        assert done.returncode == 0, done.stderr
        errors = json.loads(done.stdout)["errors"]
        return sum(e["reached"] for e in errors if e["code"] == "transaction_not_found")

    assert (not_found(), not_found("--include-tools")) == (0, 1)
