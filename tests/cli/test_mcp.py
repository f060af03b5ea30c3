"""`payorch mcp` through the official SDK's client, over stdio and over streamable HTTP.

Each `payorch mcp` costs a process with the SDK's imports and an embedded server (about a second
of CPU), so one session covers many checks: every tool is called, every resource read, and the
scripted outage → failover → explain → reset session is played.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

from payorch.vocabulary import PROVIDER_BEHAVIOURS
from payorch_cli.client import ApiError, Client
from payorch_cli.main import app
from payorch_cli.mcp.catalogue import Result, ToolSpec, declared, tool
from payorch_cli.mcp.embedded import EmbeddedServerError
from payorch_cli.mcp.sandbox import Sandbox, ToolFailure, sandbox_for
from payorch_cli.mcp.server import EXAMPLE_SCENARIO, language_from_schema
from payorch_cli.mcp.tools import READ_ONLY, TOOLS, Toolbox
from payorch_cli.scenario.credentials import Credentials
from payorch_cli.scenario.fixture import Payorch
from payorch_cli.scenario.loader import load_text
from simulator.domain.catalog import PAYIN_DECLINE_REASONS
from tests.cli.mcp_session import call, environment, fail, resource, resource_json, session, stdio
from tests.conftest import KEYS


def enum_of(schema: dict[str, Any]) -> list[str]:
    """The values of an optional enum parameter (`anyOf: [{enum}, {type: null}]`)."""
    for option in schema.get("anyOf", [schema]):
        if "enum" in option:
            return list(option["enum"])
    raise AssertionError(f"no enum in {schema}")


ALL_TOOLS = {spec.name for spec in TOOLS}
RESOURCES = {
    "payorch://openapi",
    "payorch://scenarios/language",
    "payorch://scenarios/schema",
    "payorch://credentials",
}


def test_at_most_twenty_tools_each_with_a_one_line_description() -> None:
    assert len(TOOLS) <= 20
    assert len(ALL_TOOLS) == len(TOOLS)
    for spec in TOOLS:
        assert "\n" not in spec.description and len(spec.description) <= 120, spec.name
    assert {
        "get_payment",
        "list_payments",
        "explain_payment",
        "recent_requests",
        "webhook_deliveries",
        "sandbox_status",
        "record_scenario",
        "coverage",
    } == READ_ONLY


def test_a_tool_is_declared_once_on_its_method() -> None:
    """Issue 33: `@tool` on the method is the whole declaration (no second table to keep in
    step); every public method of the Toolbox is a tool, and a description an agent cannot read
    on one line is refused when the class is defined."""
    public = {name for name in vars(Toolbox) if not name.startswith("_")}
    assert public == ALL_TOOLS

    class More(Toolbox):
        @tool("Say hello.", read_only=True)
        def hello(self) -> Result:
            return Result("hello", {})

    assert declared(More) == (ToolSpec("hello", "Say hello.", True, False),)
    with pytest.raises(ValueError, match="one line"):
        tool("Two\nlines.")
    with pytest.raises(ValueError, match="cannot be destructive"):
        tool("Both.", read_only=True, destructive=True)


async def _scripted_outage(client: Any) -> None:
    """A production payment fails over during a provider outage; the agent explains it."""
    await call(client, "save_state", name="before-outage")
    incident, _ = await call(
        client,
        "start_incident",
        provider_id="prv_transbank_cl",
        behaviour="outage",
        duration_seconds=600,
    )
    assert incident["active"] is True
    payment, _ = await call(
        client, "create_payment", amount=20, payment_method_id="1020", environment="production"
    )
    assert payment["status"] == "pending"
    tx = payment["transactionId"]
    explained, text = await call(client, "explain_payment", payment_id=tx)
    assert "It failed over from prv_transbank_cl (unavailable) to prv_cardhub." in text
    assert explained["environment"] == "production"
    kinds = [
        (e["kind"], e.get("provider"), e.get("outcome")) for e in explained["trace"]["entries"]
    ]
    assert ("routing_attempt", "prv_transbank_cl", "unavailable") in kinds
    assert ("provider_chosen", "prv_cardhub", None) in kinds
    assert [r["path"] for r in explained["requests"]] == ["/api/v1/payments"]
    assert explained["requests"][0]["environment"] == "production"
    # The production payment is found without saying where it lives.
    found, _ = await call(client, "get_payment", payment_id=tx)
    assert found["id"] == tx
    await call(client, "reset_sandbox")
    status, _ = await call(client, "sandbox_status")
    transbank = next(p for p in status["providers"] if p["id"] == "prv_transbank_cl")
    assert transbank["incidents"] == [] and transbank["effectiveBehaviour"] == "accept"


async def test_stdio_every_tool_resource_and_prompt() -> None:
    async with session(stdio()) as client:
        listed = (await client.list_tools()).tools
        assert {t.name for t in listed} == ALL_TOOLS
        for tool in listed:
            assert tool.description and "\n" not in tool.description
            assert tool.input_schema["type"] == "object"
            assert tool.annotations is not None
            assert tool.annotations.read_only_hint == (tool.name in READ_ONLY)
        create = next(t for t in listed if t.name == "create_payment")
        assert create.input_schema["required"] == ["amount", "payment_method_id"]
        assert create.input_schema["properties"]["environment"]["enum"] == [
            "sandbox",
            "production",
        ]
        # A provider's behaviours and decline reasons are the vocabulary's and the catalogue's
        # (one table, issue 27), not a copy kept beside them.
        script = next(t for t in listed if t.name == "script_provider")
        properties = script.input_schema["properties"]
        assert enum_of(properties["behaviour"]) == list(PROVIDER_BEHAVIOURS)
        assert enum_of(properties["decline_reason"]) == list(PAYIN_DECLINE_REASONS)

        # Resources: each one read.
        assert {str(r.uri) for r in (await client.list_resources()).resources} == RESOURCES
        openapi = await resource_json(client, "payorch://openapi")
        assert openapi["openapi"].startswith("3.1") and "/payments" in openapi["paths"]
        assert "scenario" in await resource(client, "payorch://scenarios/language")
        schema = await resource_json(client, "payorch://scenarios/schema")
        assert "steps" in schema["properties"]
        credentials = await resource_json(client, "payorch://credentials")
        assert credentials["inUse"] == {"sandbox": KEYS.sandbox_sk, "production": KEYS.live_sk}
        base_url = credentials["baseUrl"]
        assert any(r["secretKey"] == KEYS.sandbox_sk for r in credentials["fixtures"])

        prompts = {p.name for p in (await client.list_prompts()).prompts}
        assert prompts == {"rehearse_provider_outage", "debug_payment"}
        prompt = await client.get_prompt("rehearse_provider_outage", {})
        assert "start_incident" in str(prompt.messages[0].content)

        await _scripted_outage(client)
        await _every_tool(client, base_url)
    # The embedded server ended with the MCP server.
    with pytest.raises(ApiError) as gone:
        Client(base_url, KEYS.sandbox_sk, timeout=5).get("/ping")
    assert gone.value.code == "connection_failed"


async def _every_tool(client: Any, base_url: str) -> None:
    status, text = await call(client, "sandbox_status")
    assert status["embedded"] is True and status["baseUrl"] == base_url
    assert "Simulated time" in text and [s["name"] for s in status["states"]] == ["before-outage"]

    sold, _ = await call(client, "create_payment", amount=80, payment_method_id="1001")
    tx = sold["transactionId"]
    other, _ = await call(client, "create_payment", amount=200, payment_method_id="1001")
    got, _ = await call(client, "get_payment", payment_id=tx, environment="sandbox")
    assert got["status"] == "pending"
    listed, text = await call(client, "list_payments", status="pending")
    assert {p["id"] for p in listed["data"]} == {tx, other["transactionId"]}
    paid, _ = await call(client, "simulate_payment", payment_id=tx, action="paid")
    assert paid["status"] == "completed"
    await call(client, "simulate_payment", payment_id=other["transactionId"], action="paid")
    clock, _ = await call(client, "advance_clock", seconds=2 * 86400)
    assert clock["offsetSeconds"] >= 2 * 86400
    refund, _ = await call(client, "refund_payment", payment_id=tx, amount=500)
    assert refund["status"] == "pending" and refund["amount"] == 500

    # A payout, made by the application (plain HTTP), driven by the tool.
    api = Client(base_url, KEYS.sandbox_sk)
    api.post("/me/payout/fund-sandbox", {"currency": "MXN", "amount": 1000})
    payout = api.post(
        "/me/payout/send",
        {
            "methodId": "po_mx_spei",
            "amount": 200,
            "recipient": {
                "name": "Ana López",
                "account": "012180001183597198",
                "documentType": "RFC",
                "documentId": "IXLZ9511197B1",
            },
        },
    )["payout"]
    done, _ = await call(client, "simulate_payout", payout_id=payout["id"], action="completed")
    assert done["payout"]["status"] == "completed"
    explained, _ = await call(client, "explain_payment", payment_id=payout["id"])
    assert explained["subject"] == "payout"

    provider, _ = await call(
        client, "script_provider", provider_id="prv_stp_mx", callback_mode="duplicate"
    )
    assert provider["callback"]["mode"] == "duplicate"
    started, _ = await call(
        client,
        "start_incident",
        provider_id="prv_stp_mx",
        behaviour="outage",
        duration_seconds=60,
        starts_in_seconds=3600,
    )
    ended, _ = await call(client, "end_incident", provider_id="prv_stp_mx")
    assert [i["id"] for i in ended["data"]] == [started["id"]]

    # Webhooks: none yet (the hint says how), then the application's inbox gets deliveries.
    none, text = await call(client, "webhook_deliveries")
    assert none["data"] == [] and "POST /api/v1/webhooks" in text
    hook = api.post("/webhooks", {"events": "*"})
    await call(client, "simulate_payment", payment_id=other["transactionId"], action="refunded")
    deliveries, text = await call(client, "webhook_deliveries", webhook_id=hook["id"])
    assert {d["eventType"] for d in deliveries["data"][0]["deliveries"]} == {"payment.refunded"}
    api.close()

    errors = await fail(client, "simulate_payment", payment_id="TXN-NOSUCH", action="paid")
    assert errors[0]["code"] == "transaction_not_found" and errors[0]["hint"]
    recent, text = await call(client, "recent_requests", errors_only=True)
    assert [r["errorCode"] for r in recent["data"]] == ["transaction_not_found"]
    everything, _ = await call(client, "recent_requests", limit=100)
    assert len(everything["data"]) > 10

    saved, _ = await call(client, "save_state", name="after-sales")
    assert saved["name"] == "after-sales"
    await call(client, "create_payment", amount=5, payment_method_id="1001")
    await call(client, "restore_state", name="after-sales")
    listed, _ = await call(client, "list_payments")
    assert len(listed["data"]) == 2

    report, text = await call(client, "coverage")
    assert set(report["totals"]) >= {"stateRows", "events", "errors"}
    assert text.startswith("coverage:")
    unreached, _ = await call(client, "coverage", unreached_only=True)
    assert set(unreached["unreached"]) == {"stateRows", "events", "errors"}

    # The language resource's example runs as written (an installed copy shows it).
    ran, text = await call(client, "run_scenario", scenario_yaml=EXAMPLE_SCENARIO)
    assert ran["passed"] == 1, text

    # Record the session as a scenario, and run it: it passes against the same sandbox.
    await call(client, "reset_sandbox")
    await call(client, "sandbox_status")  # an observation: a tool's read, not recorded
    sale, _ = await call(client, "create_payment", amount=30, payment_method_id="1001")
    await call(client, "simulate_payment", payment_id=sale["transactionId"], action="paid")
    recorded, yaml_text = await call(client, "record_scenario", last=2, name="one sale")
    assert recorded["steps"] == 2 and "scenario: one sale" in yaml_text
    assert "simulate:" in yaml_text or "/simulate" in yaml_text
    # Its reads carry its own tool tag, which the log leaves out of a recording altogether.
    assert not any(step.startswith("GET /_sim/") for step in recorded["leftOut"])
    log = Client(base_url, KEYS.sandbox_sk, tool=None)
    tagged = log.get("/_sim/requests", includeTools="true", limit=100)
    tools = {row["tool"] for row in tagged["data"] if row["path"] == "/_sim/clock"}
    assert tools == {"mcp"}, tools  # named as the agent's server, not as the CLI
    assert "/_sim/clock" not in yaml_text and "/_sim/providers" not in yaml_text
    ran, text = await call(client, "run_scenario", scenario_yaml=yaml_text)
    assert ran["passed"] == 1 and ran["failed"] == 0, text
    bad, _ = await fail(client, "run_scenario", scenario_yaml="scenario: x\nstepz: []\n")
    assert bad["code"] == "invalid_scenario" and "stepz" in bad["message"]

    # Bad arguments: the envelope, the argument named, never pydantic's words.
    error, text = await fail(client, "create_payment", amount=-1, payment_method_id="1001")
    assert error["code"] == "invalid_request" and error["details"]["param"] == "amount"
    error, _ = await fail(client, "create_payment", amount=1, paymentMethodId="1001")
    assert "did you mean 'payment_method_id'" in error["message"]


async def test_http_transport_lists_and_calls_tools() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "payorch_cli.main", "mcp", "--http", "--port", "0"],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=environment(),
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("Listening on http://127.0.0.1:"), line
        url = line.split()[-1]
        async with session(url) as client:
            assert {t.name for t in (await client.list_tools()).tools} == ALL_TOOLS
            status, _ = await call(client, "sandbox_status")
            for uri in RESOURCES:
                assert await resource(client, uri)
            credentials = await resource_json(client, "payorch://credentials")
            assert credentials["baseUrl"] == status["baseUrl"]
            await _scripted_outage(client)
    finally:
        process.terminate()
        assert process.wait(10) == 0
    with pytest.raises(ApiError):
        Client(status["baseUrl"], KEYS.sandbox_sk, timeout=5).get("/ping")


def test_sigterm_ends_the_stdio_server_and_its_embedded_server() -> None:
    """An agent (or a supervisor) that sends SIGTERM gets an exit at once, with the embedded
    server stopped, even while the agent keeps stdin open."""
    process = subprocess.Popen(
        [sys.executable, "-m", "payorch_cli.main", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=environment(),
    )
    stdin, stdout = process.stdin, process.stdout
    assert stdin is not None and stdout is not None

    def send(message: dict[str, Any]) -> None:
        stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        stdin.flush()

    try:
        client = {"name": "test", "version": "1"}
        params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
        send({"id": 1, "method": "initialize", "params": params})
        assert json.loads(stdout.readline())["id"] == 1
        send({"method": "notifications/initialized"})
        send({"id": 2, "method": "tools/call", "params": {"name": "sandbox_status"}})
        answer = json.loads(stdout.readline())
        base_url = answer["result"]["structuredContent"]["baseUrl"]
        process.terminate()
        assert process.wait(15) == 0
    finally:
        process.kill()
        process.wait()
    with pytest.raises(ApiError):
        Client(base_url, KEYS.sandbox_sk, timeout=5).get("/ping")


async def test_read_only_with_a_production_key(payorch: Payorch) -> None:
    """--read-only offers only the tools that change nothing; a production key does only what
    the API allows it (payments and traces) and every other tool is refused before sending."""
    args = ("--read-only", "--base-url", payorch.base_url, "--api-key", KEYS.live_sk)
    live = Client(payorch.base_url, KEYS.live_sk)
    tx = live.post("/payments", {"amount": 20, "paymentMethodId": "1020"})["transactionId"]
    async with session(stdio(*args)) as client:
        assert {t.name for t in (await client.list_tools()).tools} == READ_ONLY
        # No secret key to change the sandbox with over HTTP, past the tools withheld.
        credentials = await resource_json(client, "payorch://credentials")
        assert credentials["inUse"] == {"sandbox": None, "production": None}
        assert credentials["fixtures"] and all(
            row["secretKey"] is None for row in credentials["fixtures"]
        )
        got, _ = await call(client, "get_payment", payment_id=tx)
        assert got["id"] == tx
        explained, text = await call(client, "explain_payment", payment_id=tx)
        assert explained["environment"] == "production" and "request log needs a sandbox" in text
        error, _ = await fail(client, "sandbox_status")
        assert error["code"] == "production_key_refused" and "sandbox" in error["hint"]
        error, _ = await fail(client, "recent_requests")
        assert error["code"] == "production_key_refused"
        unknown = await client.call_tool("create_payment", {"amount": 1, "payment_method_id": "1"})
        assert unknown.is_error


def test_an_installed_copy_describes_the_scenario_language_from_its_schema() -> None:
    text = language_from_schema()
    for kind in ("create_payment", "advance_clock", "provider", "expect_event", "save_state"):
        assert f"- `{kind}`:" in text
    assert EXAMPLE_SCENARIO in text + "\n"
    load_text(EXAMPLE_SCENARIO, "<example>", Credentials.builtin().check)


def test_a_production_key_is_kept_apart_from_the_sandbox_key() -> None:
    live = sandbox_for("http://127.0.0.1:1", KEYS.live_sk)
    assert (live.sandbox_key, live.production()) == (None, KEYS.live_sk)
    fixture = sandbox_for("http://127.0.0.1:1", KEYS.sandbox_sk)
    assert (fixture.sandbox_key, fixture.production()) == (KEYS.sandbox_sk, KEYS.live_sk)
    raw = sandbox_for("http://127.0.0.1:1", "sk_test_notafixture")
    assert raw.production() is None


def test_an_embedded_server_that_did_not_start_is_the_first_call_s_error() -> None:
    def ready() -> str:
        raise EmbeddedServerError("the embedded payorch server ended before listening: boom")

    sandbox = Sandbox(None, KEYS.sandbox_sk, ready=ready)
    with pytest.raises(ToolFailure) as failed:
        sandbox.get("/_sim/clock")
    assert failed.value.code == "embedded_server_failed" and "boom" in failed.value.message


class _Recorder(BaseHTTPRequestHandler):
    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.seen.append(self.path)
        body = b'{"now": "2026-01-01T00:00:00Z", "offsetSeconds": 0}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def test_a_namespace_prefixes_every_request() -> None:
    """design.md 1.6: with --namespace every call goes under /ns/{name} (the API and the control
    plane alike). Namespaces are built on another branch: this checks the paths sent."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        sandbox = Sandbox(url, KEYS.sandbox_sk, namespace="ci-1")
        sandbox.get("/_sim/clock")
        sandbox.get("/payments/TXN-1")
        sandbox.close()
    finally:
        server.shutdown()
    assert _Recorder.seen == ["/ns/ci-1/_sim/clock", "/ns/ci-1/api/v1/payments/TXN-1"]


@pytest.mark.parametrize(
    ("args", "status", "words"),
    [
        (["--namespace", "Bad_Name"], 2, "is not a namespace name"),
        (["--base-url", "http://127.0.0.1:9"], 3, "cannot reach http://127.0.0.1:9"),
        (["--allow-env", "A-B"], 2, "is not an environment variable name"),
        (["--scenario-dir", "/no/such/folder"], 2, "no such folder"),
    ],
)
def test_bad_options_are_one_line_errors(args: list[str], status: int, words: str) -> None:
    result = CliRunner().invoke(app, ["mcp", *args], env={"PAYORCH_BASE_URL": ""})
    assert result.exit_code == status, result.output
    assert words in result.output and "Traceback" not in result.output
