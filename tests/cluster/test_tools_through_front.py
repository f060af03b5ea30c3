"""payorch's own tools against `payorch serve --workers 2` behind real nginx, unchanged: the TUI
(Textual's Pilot), `payorch logs tail`, `payorch record`, `payorch scenario run` and the pytest
plugin, each in namespaces that live on both workers (`one_per_worker`), so that a tool that
reaches only `default`'s worker, or lists one worker's rows, fails here."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from payorch_cli.tui.app import PayorchApp
from payorch_cli.tui.backend import Backend
from payorch_cli.tui.screens.balances import BalancesScreen
from payorch_cli.tui.widgets.header import StatusHeader
from payorch_cli.tui.widgets.transactions import TransactionsTable
from tests.cli.test_listen import exit_code
from tests.cli.test_logs import start_tail, wait_until_tailing
from tests.cli.test_ns import run
from tests.cli.test_plugin import QUIET, project
from tests.cluster.cluster import DEFAULT_SK, Cluster, Space, needs_nginx, one_per_worker
from tests.tui.helpers import settle, until

pytestmark = needs_nginx
PAYMENT = {"amount": 50, "paymentMethodId": "1001"}
TIMEOUT = 20.0  # a bound for a stuck test on a loaded machine, not an expectation


def pay(cluster: Cluster, key: str, **extra: Any) -> str:
    response = cluster.call("POST", "/api/v1/payments", key, {**PAYMENT, **extra})
    assert response.status == 200, response.body
    return str(response.json()["transactionId"])


# -- the TUI ------------------------------------------------------------------------------------


async def test_the_tui_watches_default_and_a_namespace_on_each_worker(cluster: Cluster) -> None:
    spaces = await asyncio.to_thread(one_per_worker, cluster, "tui")
    in_default = await asyncio.to_thread(pay, cluster, DEFAULT_SK)
    prepared = {s.name: await asyncio.to_thread(pay, cluster, s.sk) for s in spaces}
    backend = await asyncio.to_thread(Backend, cluster.url, DEFAULT_SK)
    app = PayorchApp(backend)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.connection == "live", TIMEOUT, "default's stream")
        await until(pilot, lambda: in_default in table(app).rows, TIMEOUT, "default's row")
        assert not set(prepared.values()) & set(table(app).rows)
        for space in spaces:
            await switch_and_watch(pilot, app, cluster, space, prepared[space.name])


def table(app: PayorchApp) -> TransactionsTable:
    return app.screen.query_one(TransactionsTable)


async def switch_and_watch(
    pilot: Pilot[None], app: PayorchApp, cluster: Cluster, space: Space, mine: str
) -> None:
    """`n` to `space`: its transactions, its live events and its balance, nobody else's."""
    await pilot.press("n")
    await settle(pilot)
    await pilot.press(*space.name, "enter")
    header = app.screen.query_one(StatusHeader)
    await until(
        pilot,
        lambda: header.server.endswith(f"/ns/{space.name}") and app.connection == "live",
        TIMEOUT,
        f"{space.name}'s stream",
    )
    await until(pilot, lambda: mine in table(app).rows, TIMEOUT, f"{space.name}'s row")
    assert set(table(app).rows) == {mine}, table(app).rows  # nothing of default or the other
    # A change made by someone else reaches the screen through the namespace's stream.
    simulated = await asyncio.to_thread(
        cluster.call, "POST", f"/api/v1/payments/{mine}/simulate", space.sk, {"action": "paid"}
    )
    assert simulated.status == 200, simulated.body
    await until(pilot, lambda: table(app).status_of(mine) == "completed", TIMEOUT, "completed")
    await until(
        pilot,
        lambda: any(
            e.get("type") == "payment.completed" and e["data"].get("id") == mine
            for e in app.event_log
        ),
        TIMEOUT,
        "payment.completed on the stream",
    )
    # The balances screen shows this namespace's balance, as its owner answers it.
    answer = await asyncio.to_thread(cluster.call, "GET", "/api/v1/me/balance", space.sk)
    expected = answer.json()
    await pilot.press("2")
    await until(
        pilot,
        lambda: (
            isinstance(app.screen, BalancesScreen)
            and getattr(app.screen, "balance", None) == expected
        ),
        TIMEOUT,
        f"{space.name}'s balance {expected}",
    )
    await pilot.press("1")
    await settle(pilot)


# -- logs tail, record, scenarios -----------------------------------------------------------------


def test_logs_tail_streams_each_workers_namespace_unbuffered(cluster: Cluster) -> None:
    """`payorch logs tail --namespace NAME` through nginx: each request's line arrives while
    the stream is open (nginx does not buffer `/ns/{name}/_sim/requests/stream`)."""
    for space in one_per_worker(cluster, "tail"):
        proc, lines = start_tail(cluster, "--namespace", space.name)
        try:
            wait_until_tailing(proc, lines)
            tx_id = pay(cluster, space.sk)
            assert " 200 " in lines.until("POST", " /payments ")
            assert cluster.call("GET", f"/api/v1/payments/{tx_id}", space.sk).status == 200
            assert " 200 " in lines.until("GET", tx_id)
        finally:
            proc.send_signal(signal.SIGINT)
        assert exit_code(proc, lines) == 0


SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
# Clock jumps and webhook expectations (a local receiver the owner worker delivers to).
TIMED = [
    str(SCENARIOS / "webhook_retries_replay.yaml"),
    str(SCENARIOS / "tx_deadline_expires.yaml"),
]


def test_scenarios_with_clock_jumps_and_webhooks_run_in_default_and_on_each_worker(
    cluster: Cluster,
) -> None:
    for where in ([], *(["--namespace", s.name] for s in one_per_worker(cluster, "scn"))):
        result = run("scenario", "run", *TIMED, "--base-url", cluster.url, *where, "--json")
        assert result.returncode == 0, [*where, result.stdout, result.stderr]
        report = json.loads(result.stdout)
        assert report["failed"] == 0 and report["passed"] == len(TIMED), (where, report)


def test_record_then_replay_in_a_namespace_on_each_worker(cluster: Cluster, tmp_path: Path) -> None:
    for amount, space in enumerate(one_per_worker(cluster, "rec"), start=31):
        tx_id = pay(cluster, space.sk, amount=amount)
        paid = cluster.call(
            "POST", f"/api/v1/payments/{tx_id}/simulate", space.sk, {"action": "paid"}
        )
        assert paid.status == 200, paid.body
        path = tmp_path / f"{space.name}.yaml"
        where = ("--base-url", cluster.url, "--namespace", space.name)
        recorded = run("record", *where, "--last", "2", "-o", str(path))
        assert recorded.returncode == 0, recorded.stderr
        assert "Recorded 2 requests" in recorded.stderr, recorded.stderr
        # The namespace's own log, read on its own worker: its payment and nobody else's.
        assert f"amount: {amount}" in path.read_text() and "action: paid" in path.read_text()
        replay = run("scenario", "run", str(path), *where)
        assert replay.returncode == 0, replay.stdout + replay.stderr


def test_ns_and_keys_commands_see_every_workers_namespaces(cluster: Cluster) -> None:
    spaces = one_per_worker(cluster, "cli")
    where = ("--base-url", cluster.url)
    listed = run("ns", "list", *where, "--json")
    assert listed.returncode == 0, listed.stderr
    assert {s.name for s in spaces} <= {row["name"] for row in json.loads(listed.stdout)["data"]}
    for space in spaces:
        shown = run("ns", "show", space.name, *where, "--json")
        assert shown.returncode == 0 and json.loads(shown.stdout)["name"] == space.name
        keys = run("keys", "--namespace", space.name, *where, "--json")
        assert keys.returncode == 0, keys.stderr
        assert space.sk in {row["secretKey"] for row in json.loads(keys.stdout)}
        deleted = run("ns", "delete", space.name, *where)
        assert deleted.returncode == 0, deleted.stderr
    listed = run("ns", "list", *where, "--json")
    assert not {s.name for s in spaces} & {r["name"] for r in json.loads(listed.stdout)["data"]}


def test_a_generated_clients_management_path_reaches_the_owner(cluster: Cluster) -> None:
    name = next(
        f"alias-{i}" for i in range(1000)
        if cluster.owner(f"alias-{i}") != cluster.owner("default")
    )  # fmt: skip
    made = cluster.call("PUT", f"/api/v1/_sim/namespaces/{name}", DEFAULT_SK)
    assert made.status == 201, made.body
    try:
        shown = cluster.call("GET", f"/_sim/namespaces/{name}", DEFAULT_SK)
        assert shown.status == 200, shown.body
    finally:
        cluster.call("DELETE", f"/api/v1/_sim/namespaces/{name}", DEFAULT_SK)


# -- the pytest plugin ----------------------------------------------------------------------------

PLUGIN_TESTS = """\
    import pytest

    def test_default_world(payorch):
        tx = payorch.client.post("/payments", {"amount": 50, "paymentMethodId": "1001"})
        payorch.client.post(f"/payments/{tx['transactionId']}/simulate", {"action": "paid"})
        event = payorch.events.wait_for("payment.completed", {"data": {"id": tx["transactionId"]}})
        assert event["data"]["status"] == "completed"

    @pytest.mark.parametrize("n", range(2))
    def test_in_a_namespace(payorch_namespace, n):
        ns = payorch_namespace
        with open("namespaces.txt", "a") as out:
            out.write(ns.namespace + "\\n")
        assert ns.client.get("/payments")["pagination"]["total"] == 0
        tx = ns.client.post("/payments", {"amount": 50, "paymentMethodId": "1001"})
        ns.client.post(f"/payments/{tx['transactionId']}/simulate", {"action": "paid"})
        event = ns.events.wait_for("payment.completed", {"data": {"id": tx["transactionId"]}})
        assert event["data"]["status"] == "completed"
        assert ns.advance("2d")["offsetSeconds"] > 172_000
"""
# The fresh namespaces' names are random: the project's conftest makes test_in_a_namespace[n]'s
# the n-th name the test chose (one on each worker).
NAMES_CONFTEST = """\
    import os
    import secrets
    import types

    import pytest

    import payorch_cli.scenario.suite as suite

    NAMES = os.environ["NAMES"].split(",")
    chosen = []
    suite.secrets = types.SimpleNamespace(
        token_hex=lambda size: chosen.pop() if chosen else secrets.token_hex(size)
    )

    @pytest.fixture(autouse=True)  # before payorch_namespace: autouse fixtures come first
    def _name_the_namespace(request):
        spec = getattr(request.node, "callspec", None)
        if spec is not None and "n" in spec.params:
            chosen.append(NAMES[spec.params["n"]])
"""


def test_the_pytest_plugin_in_default_on_each_worker_and_its_scenario_items(
    cluster: Cluster, tmp_path: Path
) -> None:
    names = [next(f"plugin{i}" for i in range(1000) if cluster.owner(f"scenario-plugin{i}") == w)
             for w in (0, 1)]  # fmt: skip
    root = project(
        tmp_path / "project",
        {
            "test_tools.py": PLUGIN_TESTS,
            "conftest.py": NAMES_CONFTEST,
            "scenarios/retries.yaml": (SCENARIOS / "webhook_retries_replay.yaml").read_text(),
            # Tagged isolated: run in a fresh namespace of the server.
            "scenarios/chargeback.yaml": (SCENARIOS / "chargeback_claim.yaml").read_text(),
        },
    )
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "-v", "-rf",
         "--payorch-base-url", cluster.url],
        cwd=root, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTEST_ADDOPTS": QUIET, "NAMES": ",".join(names)},
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "5 passed" in result.stdout, result.stdout
    used = (root / "namespaces.txt").read_text().split()
    assert {cluster.owner(name) for name in used} == {0, 1}, used
    listed = cluster.call("GET", "/_sim/namespaces", DEFAULT_SK).json()["data"]
    assert not {row["name"] for row in listed} & set(used)  # each deleted after its test


# -- stopping with streams open -------------------------------------------------------------------


def test_sigterm_ends_the_streams_of_every_namespace_cleanly(tmp_path: Path) -> None:
    """The streams the tools hold open (the TUI's events, logs tail's requests) in namespaces
    of both workers are ended by the server as it stops (the last chunk sent), not cut off when
    the drain's grace runs out."""
    stopping = Cluster(tmp_path / "data", 2)
    try:
        streams = []
        for space in one_per_worker(stopping, "stop"):
            for path in ("/_sim/events", "/_sim/requests/stream"):
                connection = http.client.HTTPConnection("127.0.0.1", stopping.port, timeout=30)
                connection.request("GET", path, headers={"Authorization": f"Bearer {space.sk}"})
                response = connection.getresponse()
                assert response.status == 200
                streams.append(response)
        assert stopping.stop() == 0
        for response in streams:
            response.read()  # to the end: IncompleteRead if the stream was cut off
    finally:
        stopping.kill()
