"""`payorch serve --workers 2` as users run it: real supervisor, workers and nginx. Every
credential kind and page reaches its namespace's worker (a namespace's credentials are valid on
its owner only, so a 2xx proves the route); management and listing through the front door; the
CLI and scenarios unchanged against it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.cli.test_listen import exit_code
from tests.cli.test_logs import start_tail, wait_until_tailing
from tests.cli.test_ns import run
from tests.cli.test_ns_plugin import NAMESPACE_TEST
from tests.cli.test_plugin import QUIET, project
from tests.cluster.cluster import DEFAULT_SK, Cluster, Space, needs_nginx, one_per_worker

pytestmark = needs_nginx
CUSTOMER = {
    "firstName": "Ana",
    "lastName": "Souza",
    "email": "ana@example.com",
    "phone": "+5511987654321",
}


def test_every_credential_kind_reaches_its_namespace(cluster: Cluster) -> None:
    for space in one_per_worker(cluster, "cred"):
        tx = cluster.call(
            "POST", "/api/v1/payments", space.sk, {"amount": 10, "paymentMethodId": "1001"}
        )
        assert tx.status == 200, tx.body
        tx_id = tx.json()["transactionId"]
        # The path prefix, with and without a credential.
        prefixed = cluster.call("GET", f"/ns/{space.name}/api/v1/payments/{tx_id}", space.sk)
        assert prefixed.status == 200, prefixed.body
        assert cluster.call("GET", f"/ns/{space.name}/_sim/clock", space.sk).status == 200
        # POST /auth/token carries the keys in its body; the tokens then carry the namespace.
        pair = cluster.call(
            "POST", "/api/v1/auth/token", None, {"apiKey": space.pk, "secretKey": space.sk}
        )
        assert pair.status == 200, pair.body
        access, refresh = pair.json()["accessToken"], pair.json()["refreshToken"]
        assert access.startswith(f"ns_{space.name}_")
        assert refresh.startswith(f"rt_ns_{space.name}_")
        read = cluster.call("GET", f"/api/v1/payments/{tx_id}", access)
        assert read.status == 200 and read.json()["id"] == tx_id
        # POST /auth/refresh carries the refresh token in its body.
        again = cluster.call("POST", "/api/v1/auth/refresh", None, {"refreshToken": refresh})
        assert again.status == 200, again.body
        assert cluster.call("GET", "/api/v1/me", again.json()["accessToken"]).status == 200
        # Nothing of it reached default.
        missing = cluster.call("GET", f"/api/v1/payments/{tx_id}", DEFAULT_SK)
        assert missing.status == 404, missing.body


def test_checkout_and_provider_pages_reach_their_namespace(cluster: Cluster) -> None:
    for space in one_per_worker(cluster, "page"):
        prefix = f"/ns/{space.name}"
        session = cluster.call(
            "POST",
            "/api/v1/checkout/sessions",
            space.sk,
            {"amount": 50, "customer": CUSTOMER, "returnUrl": "https://shop.example/done"},
        )
        assert session.status == 200, session.body
        url = session.json()["checkoutUrl"]
        assert url.startswith(f"{cluster.url}{prefix}/checkout/")  # the public port's URL
        token = url.rsplit("/", 1)[1]
        page = cluster.call("GET", f"{prefix}/checkout/{token}")
        assert page.status == 200 and f'action="{prefix}/checkout/{token}/select'.encode() in (
            page.body
        )
        chosen = cluster.call(
            "POST",
            f"{prefix}/api/v1/checkout/sessions/{token}/select",
            None,
            {"paymentMethodId": "1025"},
        )
        assert chosen.status == 200, chosen.body
        tx_id = chosen.json()["transactionId"]
        redirect = cluster.call("GET", f"{prefix}/c/{tx_id}")
        assert redirect.status == 307
        assert redirect.headers["location"] == f"{cluster.url}{prefix}/_sim/provider/{tx_id}"
        provider = cluster.call("GET", f"{prefix}/_sim/provider/{tx_id}")
        assert provider.status == 200 and b'id="approve"' in provider.body
        approved = cluster.call("POST", f"{prefix}/_sim/provider/{tx_id}/approve")
        assert approved.status == 303, approved.body
        final = cluster.call("GET", f"/api/v1/payments/{tx_id}", space.sk)
        assert final.json()["status"] == "completed"


def test_namespaces_are_managed_and_listed_through_the_front(cluster: Cluster) -> None:
    spaces = one_per_worker(cluster, "mgmt")
    names = [s.name for s in spaces]
    again = cluster.call("PUT", f"/_sim/namespaces/{names[0]}", DEFAULT_SK)
    assert again.status == 200  # the owner answers the existing one unchanged
    listed = cluster.call("GET", "/_sim/namespaces", DEFAULT_SK)
    assert listed.status == 200, listed.body
    rows = [row["name"] for row in listed.json()["data"]]
    assert rows[0] == "default" and set(names) <= set(rows) and rows[1:] == sorted(rows[1:])
    # A namespace's own key lists itself only, as on one process.
    own = cluster.call("GET", "/_sim/namespaces", spaces[0].sk)
    assert [row["name"] for row in own.json()["data"]] == [names[0]]
    for space in spaces:
        shown = cluster.call("GET", f"/_sim/namespaces/{space.name}", DEFAULT_SK)
        assert shown.status == 200 and shown.json()["keys"][0]["secretKey"].startswith("sk_")
        # Its files are in its owner's data dir only.
        homes = sorted(cluster.data_dir.glob(f"workers/*/namespaces/{space.name}"))
        assert homes == [
            cluster.data_dir / f"workers/{cluster.owner(space.name)}/namespaces/{space.name}"
        ]
        assert cluster.call("DELETE", f"/_sim/namespaces/{space.name}", DEFAULT_SK).status == 204
        gone = cluster.call("GET", f"/_sim/namespaces/{space.name}", DEFAULT_SK)
        assert gone.status == 404 and gone.json()["error"]["code"] == "namespace_not_found"
    rows = [r["name"] for r in cluster.call("GET", "/_sim/namespaces", DEFAULT_SK).json()["data"]]
    assert not set(names) & set(rows)


def test_logs_tail_record_and_scenarios_work_through_the_front(
    cluster: Cluster, tmp_path: Path
) -> None:
    proc, lines = start_tail(cluster)  # type: ignore[arg-type]  # start_tail reads only .url
    try:
        wait_until_tailing(proc, lines)
        paid = cluster.call(
            "POST", "/api/v1/payments", DEFAULT_SK, {"amount": 12, "paymentMethodId": "1001"}
        )
        assert paid.status == 200, paid.body
        tx_id = paid.json()["transactionId"]
        assert " 200 " in lines.until("POST", " /payments ")
        assert cluster.call("GET", f"/api/v1/payments/{tx_id}", DEFAULT_SK).status == 200
        lines.until("GET", tx_id)
    finally:
        proc.send_signal(signal.SIGINT)
    assert exit_code(proc, lines) == 0

    path = tmp_path / "recorded.yaml"
    recorded = run("record", "--base-url", cluster.url, "--last", "2", "-o", str(path))
    assert recorded.returncode == 0, recorded.stderr
    assert "Recorded 2 requests" in recorded.stderr
    replay = run("scenario", "run", str(path), "--base-url", cluster.url)
    assert replay.returncode == 0, replay.stdout + replay.stderr

    scenarios = Path(__file__).resolve().parents[2] / "scenarios"
    result = run(
        "scenario",
        "run",
        str(scenarios / "provider_timeout.yaml"),
        str(scenarios / "chargeback_claim.yaml"),
        "--base-url",
        cluster.url,
        "--namespace",
        "auto",
        "--json",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["failed"] == 0 and report["passed"] >= 2


def test_a_namespace_credential_manages_as_on_one_process(cluster: Cluster) -> None:
    """A credential of namespace `mine` (on one worker) creating a namespace the other worker
    owns: created; showing or deleting it: 403; an unknown namespace's key: 401."""
    mine, _ = one_per_worker(cluster, "caller")
    elsewhere = next(
        f"made-{i}" for i in range(1000)
        if cluster.owner(f"made-{i}") != cluster.owner(mine.name)
    )  # fmt: skip
    made = cluster.call("PUT", f"/_sim/namespaces/{elsewhere}", mine.sk)
    assert made.status == 201, made.body
    assert made.json()["name"] == elsewhere
    space = Space(elsewhere, made.json())
    assert cluster.call("GET", "/api/v1/ping", space.sk).status == 200  # usable at once
    for method in ("GET", "DELETE", "PUT"):  # PUT of an existing name answers as GET
        for path in (f"/_sim/namespaces/{elsewhere}",
                     f"/api/v1/_sim/namespaces/{elsewhere}",
                     f"/ns/{mine.name}/_sim/namespaces/{elsewhere}"):  # fmt: skip
            refused = cluster.call(method, path, mine.sk)
            assert refused.status == 403, refused.body
            assert refused.json()["error"]["code"] == "forbidden"
    # The caller's own worker judges its credential: no key, an unknown namespace's key.
    bare = cluster.call("GET", f"/ns/{mine.name}/_sim/namespaces/{elsewhere}")
    assert bare.status == 401 and bare.json()["error"]["code"] == "missing_credentials"
    unknown = cluster.call("PUT", "/_sim/namespaces/some-other", "sk_test_ns_nobody_x")
    assert unknown.status == 401 and unknown.json()["error"]["code"] == "invalid_api_key"
    assert cluster.call("DELETE", f"/_sim/namespaces/{elsewhere}", DEFAULT_SK).status == 204


def test_the_payorch_namespace_fixture_works_through_the_front(
    cluster: Cluster, tmp_path: Path
) -> None:
    """Tests in fresh namespaces of a multi-worker server, spread over its workers."""
    before = cluster.call("GET", "/_sim/namespaces", DEFAULT_SK).json()["data"]
    root = project(tmp_path / "project", {"test_ns.py": NAMESPACE_TEST})
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "-v", "--payorch-base-url",
         cluster.url],
        cwd=root, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTEST_ADDOPTS": QUIET},
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 passed" in result.stdout, result.stdout
    after = cluster.call("GET", "/_sim/namespaces", DEFAULT_SK).json()["data"]
    assert [r["name"] for r in after] == [r["name"] for r in before]  # each one deleted after
