"""`payorch serve --team --workers 2`: one team server across worker processes (real supervisor,
workers and nginx). Owners see only their own namespaces on every worker, a quota holds for the
server (not per worker), /metrics is the admin's and sums both workers, the audit trail has
every worker's entries, and a worker killed with -9 comes back with the counts it had."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.cluster.cluster import DEFAULT_SK, Cluster, Space, needs_nginx

pytestmark = needs_nginx
QUOTA = 3


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    data = tmp_path_factory.mktemp("team") / "data"
    running = Cluster(data, 2, "--team", "--namespaces-per-owner", str(QUOTA))
    yield running
    running.kill()


def admin(cluster: Cluster) -> str:
    return (cluster.data_dir / "team" / "admin-token").read_text().strip()


def owner_token(cluster: Cluster, owner: str) -> str:
    made = cluster.call("POST", "/_sim/team/tokens", admin(cluster), {"owner": owner})
    assert made.status == 201, made.body
    token: str = made.json()["token"]
    return token


def names_on(cluster: Cluster, stem: str, worker: int, count: int) -> list[str]:
    names = (f"{stem}-{i}" for i in range(1000))
    return [n for n in names if cluster.owner(n) == worker][:count]


def create(cluster: Cluster, name: str, token: str) -> Any:
    return cluster.call("PUT", f"/_sim/namespaces/{name}", token)


def test_owners_see_only_their_own_namespaces_on_every_worker(team: Cluster) -> None:
    alice, bob = owner_token(team, "alice"), owner_token(team, "bob")
    theirs: dict[str, list[str]] = {"alice": [], "bob": []}
    for who, token in (("alice", alice), ("bob", bob)):
        for worker in (0, 1):
            name = names_on(team, f"iso-{who}", worker, 1)[0]
            made = create(team, name, token)
            assert made.status == 201, made.body
            assert made.json()["owner"] == who
            theirs[who].append(name)
    for who, token, other in (("alice", alice, "bob"), ("bob", bob, "alice")):
        listed = team.call("GET", "/_sim/namespaces", token).json()["data"]
        assert sorted(row["name"] for row in listed) == sorted(theirs[who])
        for name in theirs[other]:  # one on each worker: 404 on both, never 403
            assert team.call("GET", f"/_sim/namespaces/{name}", token).status == 404
            assert team.call("DELETE", f"/_sim/namespaces/{name}", token).status == 404
            assert create(team, name, token).status == 409
    everything = team.call("GET", "/_sim/namespaces", admin(team)).json()["data"]
    assert set(theirs["alice"] + theirs["bob"]) <= {row["name"] for row in everything}
    # A namespace's own key works inside it, as in local mode, whatever the worker.
    for name in theirs["alice"]:
        space = Space(name, team.call("GET", f"/_sim/namespaces/{name}", alice).json())
        assert team.call("GET", f"/ns/{name}/api/v1/ping", space.sk).status == 200


def test_an_owners_quota_holds_across_workers_and_after_a_kill_9(team: Cluster) -> None:
    carol = owner_token(team, "carol")
    # Two on worker 0, one on worker 1: each worker alone holds fewer than the quota.
    names = names_on(team, "quota", 0, 3) + names_on(team, "quota", 1, 2)
    for name in (names[0], names[1], names[3]):
        assert create(team, name, carol).status == 201
    for name in (names[2], names[4]):  # refused on either worker: the server's count is 3
        refused = create(team, name, carol)
        assert refused.status == 403, refused.body
        error = refused.json()["error"]
        assert error["code"] == "owner_quota_exceeded"
        assert error["details"] == {"owner": "carol", "limit": QUOTA, "current": QUOTA}
    # kill -9 a worker: it comes back counting what its disk holds, no more and no less.
    victim = team.worker_pids()[1]
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        pids = team.worker_pids()
        if pids.get(1) not in (None, victim) and create(team, names[4], carol).status == 403:
            break
        time.sleep(0.2)
    else:
        raise AssertionError("worker 1 did not come back")
    whoami = team.call("GET", "/_sim/team/whoami", carol).json()
    assert whoami["namespaces"] == QUOTA
    assert team.call("DELETE", f"/_sim/namespaces/{names[3]}", carol).status == 204
    assert create(team, names[4], carol).status == 201  # one freed on worker 1, taken on 1
    assert create(team, names[2], carol).status == 403


def test_concurrent_creations_on_both_workers_never_pass_the_quota(team: Cluster) -> None:
    # 16 creations at once, half placed on each worker, for an owner allowed 3: exactly 3 are
    # made. Counting per worker would let each worker make 3.
    grace = owner_token(team, "grace")
    names = names_on(team, "race", 0, 8) + names_on(team, "race", 1, 8)
    with ThreadPoolExecutor(len(names)) as pool:
        statuses = list(pool.map(lambda n: create(team, n, grace).status, names))
    assert sorted(statuses) == [201] * QUOTA + [403] * (len(names) - QUOTA), statuses
    listed = team.call("GET", "/_sim/namespaces", grace).json()["data"]
    assert len(listed) == QUOTA
    assert team.call("GET", "/_sim/team/whoami", grace).json()["namespaces"] == QUOTA


def test_metrics_are_the_admins_and_sum_both_workers(team: Cluster) -> None:
    dave = owner_token(team, "dave")
    spaces = []
    for worker in (0, 1):
        name = names_on(team, "metrics", worker, 1)[0]
        spaces.append(Space(name, create(team, name, dave).json()))
    for space in spaces:
        for _ in range(3):
            assert team.call("GET", "/api/v1/ping", space.sk).status == 200
    assert team.call("GET", "/metrics").status == 401
    for key in (dave, DEFAULT_SK, spaces[0].sk):
        assert team.call("GET", "/metrics", key).status == 403
    scraped = team.call("GET", "/metrics", admin(team))
    assert scraped.status == 200
    counts: dict[str, float] = {}
    for family in text_string_to_metric_families(scraped.body.decode()):
        if family.name == "payorch_http_requests":
            for sample in family.samples:
                if sample.name.endswith("_total") and sample.labels["route"] == "/api/v1/ping":
                    space = sample.labels["namespace"]
                    counts[space] = counts.get(space, 0) + sample.value
    # One namespace on each worker: both workers' figures, in one scrape.
    assert {s.name: counts.get(s.name) for s in spaces} == {s.name: 3 for s in spaces}


def test_the_audit_trail_has_every_workers_entries(team: Cluster) -> None:
    erin, frank = owner_token(team, "erin"), owner_token(team, "frank")
    mine = []
    for worker in (0, 1):
        name = names_on(team, "audit", worker, 1)[0]
        space = Space(name, create(team, name, erin).json())
        advanced = team.call("POST", "/_sim/clock/advance", space.sk, {"seconds": 60})
        assert advanced.status == 200, advanced.body
        mine.append(name)
    entries = team.call("GET", "/_sim/audit", admin(team)).json()["data"]
    for name in mine:
        actions = {e["action"] for e in entries if e["namespace"] == name}
        assert "namespace.create" in actions and len(actions) == 2, actions
    own = team.call("GET", "/_sim/audit", erin).json()["data"]
    assert {e["namespace"] for e in own if e["namespace"]} >= set(mine)
    assert all(e["owner"] == "erin" for e in own)
    others = team.call("GET", "/_sim/audit", frank).json()["data"]
    assert not any(e["namespace"] in mine for e in others)


def test_the_admin_token_is_made_once_for_the_whole_server(team: Cluster) -> None:
    token = team.data_dir / "team" / "admin-token"
    assert token.stat().st_mode & 0o777 == 0o600
    assert not list(Path(team.data_dir / "workers").glob("*/team/admin-token"))
    printed = team.error_lines("admin token")
    assert len(printed) == 1 and admin(team) in printed[0]


def test_a_worker_killed_between_counting_and_making_recounts_on_restart(
    tmp_path: Path,
) -> None:
    # The state a kill -9 between the ledger's count and the namespace's directory leaves: a
    # name counted that no worker holds. It refuses (over-counts), never lets one more in, and
    # the worker that owns the name drops it when it starts again.
    cluster = Cluster(tmp_path / "data", 2, "--team", "--namespaces-per-owner", "2")
    try:
        henry = owner_token(cluster, "henry")
        assert create(cluster, names_on(cluster, "kept", 0, 1)[0], henry).status == 201
        ghost = names_on(cluster, "ghost", 1, 1)[0]
        ledger = cluster.data_dir / "team" / "namespaces.json"
        state = json.loads(ledger.read_text())
        state["namespaces"][ghost] = "henry"
        ledger.write_text(json.dumps(state))
        fresh = names_on(cluster, "fresh", 0, 1)[0]
        assert create(cluster, fresh, henry).status == 403  # counted: 2 of 2
        victim = cluster.worker_pids()[1]
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while cluster.worker_pids().get(1) in (None, victim) or (
            cluster.call("GET", "/_sim/team/whoami", henry).json()["namespaces"] != 1
        ):
            assert time.monotonic() < deadline, "worker 1 did not recount"
            time.sleep(0.2)
        assert create(cluster, fresh, henry).status == 201
        assert create(cluster, ghost, henry).status == 403  # 2 of 2 again, really
    finally:
        cluster.kill()
