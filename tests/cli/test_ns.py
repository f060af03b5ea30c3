"""`payorch ns`, `--namespace` / PAYORCH_NAMESPACE and `payorch keys --namespace`, against a real
`payorch serve` (design.md 1.6)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from payorch_cli.client import Client
from tests.cli.test_serve import PAYORCH, Server


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PAYORCH, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def test_ns_create_list_show_delete_and_keys(server: Server, tmp_path: Path) -> None:
    created = run("ns", "create", "ci-7", "--idle", "3600", "--base-url", server.url, "--json")
    assert created.returncode == 0, created.stderr
    body = json.loads(created.stdout)
    assert body["name"] == "ci-7" and body["idleSeconds"] == 3600
    secrets = {row["secretKey"] for row in body["keys"]}
    assert all(key.split("_")[2:4] == ["ns", "ci-7"] for key in secrets)
    again = run("ns", "create", "ci-7", "--base-url", server.url)
    assert again.returncode == 0 and "ci-7" in again.stdout and "sk_test_ns_ci-7_" in again.stdout
    listed = run("--base-url", server.url, "--json", "ns", "list")
    assert [n["name"] for n in json.loads(listed.stdout)["data"]] == ["default", "ci-7"]
    shown = run("ns", "show", "ci-7", "--base-url", server.url, "--json")
    assert json.loads(shown.stdout)["keys"] == body["keys"]
    # keys --namespace: from the server, and derived from the data dir without one.
    for args in (["--base-url", server.url], ["--data-dir", str(tmp_path / "data")]):
        keys = run("keys", "--namespace", "ci-7", "--json", *args)
        assert keys.returncode == 0, keys.stderr
        assert json.loads(keys.stdout) == body["keys"]
    bad = run("ns", "create", "Not_Valid", "--base-url", server.url)
    assert bad.returncode == 2 and "[a-z0-9][a-z0-9-]{0,39}" in bad.stderr
    assert "Traceback" not in bad.stderr
    refused = run("ns", "delete", "default", "--base-url", server.url)
    assert refused.returncode == 1 and "forbidden" in refused.stderr
    deleted = run("ns", "delete", "ci-7", "--base-url", server.url)
    assert deleted.returncode == 0, deleted.stderr
    gone = run("ns", "show", "ci-7", "--base-url", server.url)
    assert gone.returncode == 1 and "namespace_not_found" in gone.stderr


def test_namespace_option_and_environment_reach_every_command(server: Server) -> None:
    Client(server.url).namespace_call("PUT", "ci-8")
    # After the command, before it, and from the environment: the namespace's clock moves.
    moved = run("clock", "advance", "1d", "--namespace", "ci-8", "--base-url", server.url)
    assert moved.returncode == 0, moved.stderr
    shown = run("--namespace", "ci-8", "--json", "clock", "show", "--base-url", server.url)
    assert (
        json.loads(shown.stdout)["offsetSeconds"] > 86_000
    )  # a release takes the time the jobs took
    from_env = run(
        "--json", "clock", "show", "--base-url", server.url, env={"PAYORCH_NAMESPACE": "ci-8"}
    )
    assert (
        json.loads(from_env.stdout)["offsetSeconds"] > 86_000
    )  # a release takes the time the jobs took
    default = run("--json", "clock", "show", "--base-url", server.url)
    assert json.loads(default.stdout)["offsetSeconds"] < 60
    # A payment made in the namespace is listed there only.
    tx = Client(server.url, namespace="ci-8").post(
        "/payments", {"amount": 10, "paymentMethodId": "1001"}
    )
    assert Client(server.url, namespace="ci-8").get(f"/payments/{tx['transactionId']}")
    assert Client(server.url).get("/payments")["data"] == []
    unknown = run("clock", "show", "--namespace", "nobody", "--base-url", server.url)
    assert unknown.returncode == 1 and "namespace_not_found" in unknown.stderr


def test_keys_of_a_namespace_the_data_dir_does_not_have(tmp_path: Path) -> None:
    result = run("keys", "--namespace", "nobody", "--data-dir", str(tmp_path / "data"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1 and "no namespace 'nobody'" in result.stderr


def test_the_mcp_servers_namespace_sandbox_works_against_real_namespaces(server: Server) -> None:
    """`payorch mcp --namespace NAME` (design.md 1.8) takes the namespace's keys from PUT."""
    from payorch_cli.mcp.sandbox import namespace_sandbox

    Client(server.url).post("/payments", {"amount": 10, "paymentMethodId": "1001"})
    sandbox = namespace_sandbox(server.url, "agent-1", "sk_test_19g744zrbw5buqxqpxp5w4gj")
    try:
        assert sandbox.get("/payments")["pagination"]["total"] == 0
        assert "agent-1" in sandbox.get("/_sim/namespaces/agent-1")["name"]
    finally:
        sandbox.close()
