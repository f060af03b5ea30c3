"""The MCP server itself, on the official Python SDK (`mcp` 2.x, `MCPServer`): the tools of
`tools.py`, three resources and two prompts, over stdio or streamable HTTP.

This module and `stdio.py` (the stdio transport) are the only ones that import the SDK (about
0.6 s of imports): `payorch --help` and every other command never load it.
"""

from __future__ import annotations

import functools
import inspect
import json
import math
import sys
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent, ToolAnnotations

from payorch_cli.mcp.access import ScenarioAccess
from payorch_cli.mcp.sandbox import Sandbox, ToolFailure
from payorch_cli.mcp.tools import TOOLS, Result, Toolbox, ToolSpec

INSTRUCTIONS = """\
A local, offline payment-orchestration sandbox (payorch): the API your code integrates with, at
the base URL sandbox_status gives (paths under /api/v1, Bearer secret keys from the
payorch://credentials resource). Beyond the API you can drive outcomes (simulate_payment,
simulate_payout), move the simulated clock (advance_clock), break providers in production
(start_incident, script_provider: the sandbox cascade always accepts), see why a payment ended as
it did (explain_payment, recent_requests, webhook_deliveries), and put the world back
(reset_sandbox, save_state, restore_state). record_scenario turns what you did into a
regression test; run_scenario runs one."""

READ_ONLY_NOTE = (
    "payorch mcp --read-only: secret keys are withheld; the tools offered change nothing."
)
SCENARIOS_DOC = Path(__file__).resolve().parents[2] / "docs" / "scenarios.md"


def _tool(toolbox: Toolbox, spec: ToolSpec) -> Any:
    """The SDK-facing function of a tool: the method's signature (its input schema) returning a
    CallToolResult: the text and the data, or the error envelope marked as an error."""
    method = getattr(toolbox, spec.name)

    @functools.wraps(method)
    def call(**arguments: Any) -> CallToolResult:
        try:
            result: Result = method(**arguments)
        except ToolFailure as failure:
            return _failure(failure)
        except Exception as exc:  # a bug of ours: the envelope, never a traceback
            return _failure(ToolFailure("internal_error", f"{type(exc).__name__}: {exc}"))
        return CallToolResult(
            content=[TextContent(type="text", text=result.text)],
            structured_content=result.data,
        )

    signature = inspect.signature(method, eval_str=True)
    # The SDK reads the input schema from the signature (inspect follows __signature__).
    call.__signature__ = signature.replace(  # type: ignore[attr-defined]  # not declared on functions
        return_annotation=CallToolResult
    )
    return call


def _failure(failure: ToolFailure) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=failure.text())],
        structured_content=failure.envelope(),
        is_error=True,
    )


class ArgumentCheck:
    """Middleware: a tool call's arguments checked against the tool's input schema before the
    SDK sees them, so a bad one is answered as the API answers bad input (`invalid_request`,
    the argument as `param`, a hint) rather than in pydantic's words; unknown argument names
    are named, with the closest known one."""

    def __init__(self, server: MCPServer) -> None:
        self.server = server
        self.validators: dict[str, Any] = {}
        self.known: dict[str, set[str]] = {}

    async def _load(self) -> None:
        from jsonschema import Draft202012Validator

        for tool in await self.server.list_tools():
            schema = dict(tool.input_schema)
            self.validators[tool.name] = Draft202012Validator(schema)
            self.known[tool.name] = set(schema.get("properties") or {})

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if ctx.method != "tools/call":
            return await call_next(ctx)
        if not self.validators:
            await self._load()
        params = ctx.params if isinstance(ctx.params, dict) else {}
        name = params.get("name")
        if name not in self.validators:
            return await call_next(ctx)
        arguments = params.get("arguments") or {}
        problems = self.problems(name, arguments)
        if not problems:
            return await call_next(ctx)
        param, _ = problems[0]
        failure = ToolFailure(
            "invalid_request",
            "; ".join(f"{where}: {what}" for where, what in problems),
            hint=f"Check the arguments against {name}'s input schema (tools/list).",
            details={"param": param, "tool": name},
        )
        return _failure(failure)

    def problems(self, name: str, arguments: Any) -> list[tuple[str, str]]:
        from payorch_cli.options import did_you_mean

        if not isinstance(arguments, dict):
            return [("arguments", "must be an object")]
        numbers = _bad_numbers(arguments, "")
        if numbers:  # before the schema, whose words would quote a 4,000-digit number
            return numbers
        known = self.known[name]
        found = [
            (key, f"unknown argument{did_you_mean(key, sorted(known))}")
            for key in arguments
            if key not in known
        ]
        for error in self.validators[name].iter_errors(arguments):
            where = ".".join(str(part) for part in error.absolute_path)
            if not where and error.validator == "required":
                where = str(error.message).split("'")[1] if "'" in error.message else "arguments"
            found.append((where or "arguments", error.message))
        return found


# The API's integers are 64-bit (orjson writes no larger one); a float past it is no amount.
LARGEST_NUMBER = 2**63
OUT_OF_RANGE = "must be a finite number below 2**63 in magnitude (not NaN or Infinity)"


def _bad_numbers(value: Any, where: str) -> list[tuple[str, str]]:
    """Numbers JSON-RPC carries but no tool takes: NaN, infinities (Infinity, 1e999, an integer
    too long to read: stdio.py), and integers past 64 bits. Named, never quoted."""
    if isinstance(value, dict):
        return [
            p
            for key, item in value.items()
            for p in _bad_numbers(item, f"{where}.{key}".lstrip("."))
        ]
    if isinstance(value, list):
        return [p for i, item in enumerate(value) for p in _bad_numbers(item, f"{where}[{i}]")]
    if isinstance(value, bool) or not isinstance(value, int | float):
        return []
    if not math.isfinite(value) or abs(value) >= LARGEST_NUMBER:
        return [(where, OUT_OF_RANGE)]
    return []


def build_server(
    sandbox: Sandbox, *, read_only: bool = False, access: ScenarioAccess | None = None
) -> MCPServer:
    server: MCPServer = MCPServer(
        "payorch",
        title="payorch payment sandbox",
        instructions=INSTRUCTIONS,
        version=_version(),
        log_level="WARNING",
    )
    toolbox = Toolbox(sandbox, access)
    for spec in TOOLS:
        if read_only and not spec.read_only:
            continue
        server.add_tool(
            _tool(toolbox, spec),
            name=spec.name,
            description=spec.description,
            annotations=ToolAnnotations(
                read_only_hint=spec.read_only,
                destructive_hint=spec.destructive if not spec.read_only else None,
                idempotent_hint=spec.read_only,
                open_world_hint=False,
            ),
        )
    _resources(server, sandbox, read_only)
    _prompts(server)
    server.middleware.append(ArgumentCheck(server))
    return server


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("payorch")
    except PackageNotFoundError:
        return "0"


def _resources(server: MCPServer, sandbox: Sandbox, read_only: bool) -> None:
    _document_resources(server, sandbox)
    _credentials_resource(server, sandbox, read_only)


def _document_resources(server: MCPServer, sandbox: Sandbox) -> None:
    """The API's and the scenario language's documents."""

    @server.resource(
        "payorch://openapi",
        name="openapi",
        title="The API's OpenAPI 3.1 document",
        description="Every path, schema and error code of /api/v1 and the /_sim control plane.",
        mime_type="application/json",
    )
    def openapi() -> str:
        try:
            document = sandbox.get("/openapi.json")
        except ToolFailure:  # the server is gone: the installed package has the same document
            from simulator.openapi.document import pretty_json

            return pretty_json().decode()
        return json.dumps(document, indent=2, ensure_ascii=False)

    @server.resource(
        "payorch://scenarios/language",
        name="scenario-language",
        title="The scenario language (docs/scenarios.md)",
        description="How to write the YAML scenarios run_scenario runs and record_scenario writes.",
        mime_type="text/markdown",
    )
    def scenario_language() -> str:
        if SCENARIOS_DOC.is_file():
            return SCENARIOS_DOC.read_text(encoding="utf-8")
        return language_from_schema()  # an installed copy, without the repository's docs/

    @server.resource(
        "payorch://scenarios/schema",
        name="scenario-schema",
        title="The scenario files' JSON Schema",
        mime_type="application/schema+json",
    )
    def scenario_schema() -> str:
        from payorch_cli.scenario.schema import render, served

        return render(served())


def _credentials_resource(server: MCPServer, sandbox: Sandbox, read_only: bool) -> None:
    @server.resource(
        "payorch://credentials",
        name="credentials",
        title="The sandbox's base URL and keys",
        description="The keys this MCP server uses and every fixture credential "
        "(payorch keys --json), for your application's configuration.",
        mime_type="application/json",
    )
    def credentials() -> str:
        return _credentials_document(sandbox, read_only)


def _credentials_document(sandbox: Sandbox, read_only: bool) -> str:
    from payorch_cli.credentials import fixture_rows

    in_use = {"sandbox": sandbox.sandbox_key, "production": sandbox.production()}
    rows = [] if sandbox.namespace else fixture_rows()
    document: dict[str, Any] = {
        "baseUrl": sandbox.api_url,
        "apiBaseUrl": sandbox.api_url + "/api/v1",
        "namespace": sandbox.namespace,
    }
    if read_only:
        # A secret key would let the agent change the sandbox over HTTP, past the tools
        # --read-only withholds; the publishable keys stay (a browser holds them anyway).
        document["inUse"] = dict.fromkeys(in_use)
        document["fixtures"] = [{**row, "secretKey": None} for row in rows]
        document["readOnly"] = READ_ONLY_NOTE
    else:
        document["inUse"], document["fixtures"] = in_use, rows
    return json.dumps(document, indent=2)


EXAMPLE_SCENARIO = """\
scenario: "an outage fails over to the next provider"
tags: [providers, production, isolated]
as: shp_mazul_tienda/production        # provider behaviours apply to production keys only
steps:
  - provider: {id: prv_transbank_cl, incident: {behaviour: outage, for: 10m}}
    as: shp_mazul_tienda               # the control plane takes the sandbox key
  - create_payment: {amount: 20, paymentMethodId: "1020"}
    expect: {json: {status: pending}}
    save: {tx: transactionId}
  - trace: {payment: "${tx}"}
    expect:
      json:
        entries:
          $contains: [{kind: routing_attempt, provider: prv_transbank_cl, outcome: unavailable}]
  - advance_clock: 31s
    as: shp_mazul_tienda
  - get_payment: "${tx}"
    expect: {json: {status: completed}}
  - reset_providers: {}
    as: shp_mazul_tienda
"""


def language_from_schema() -> str:
    """The scenario language in brief, from its JSON Schema (package data): the top-level keys,
    every kind of step with what it does, and an example. The full reference is the repository's
    docs/scenarios.md, which an installed copy does not carry."""
    from payorch_cli.scenario import SCHEMA_PATH

    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    lines = ["# payorch scenarios", "", str(schema.get("description", "")), "", "Top-level keys:"]
    for key, spec in schema["properties"].items():
        lines.append(f"- `{key}`: {spec.get('description', '')}".rstrip(": "))
    lines += ["", "Steps (one key each, plus `name`, `as`, `expect`, `save`):"]
    for option in schema["$defs"]["step"]["oneOf"]:
        kind = (option.get("required") or ["?"])[0]
        lines.append(f"- `{kind}`: {option.get('description', '')}".rstrip(": "))
    lines += ["", "Example:", "", "```yaml", EXAMPLE_SCENARIO.rstrip(), "```", ""]
    lines.append("The JSON Schema is the payorch://scenarios/schema resource.")
    return "\n".join(lines)


def _prompts(server: MCPServer) -> None:
    @server.prompt(
        name="rehearse_provider_outage",
        title="Rehearse a provider outage",
        description="Break a provider in production, watch a payment fail over, explain it, "
        "and put the sandbox back.",
    )
    def rehearse_provider_outage(
        provider_id: str = "prv_transbank_cl", payment_method_id: str = "1020"
    ) -> str:
        return (
            f"Rehearse an outage of {provider_id} with the payorch tools:\n"
            "1. save_state name=before-outage.\n"
            f"2. start_incident provider_id={provider_id} behaviour=outage "
            "duration_seconds=600.\n"
            f"3. create_payment environment=production payment_method_id={payment_method_id} "
            "amount=50 (or run the application code under test against the sandbox's "
            "production key from payorch://credentials).\n"
            "4. explain_payment on the new payment: say which provider failed, which took it, "
            "and what the merchant saw.\n"
            "5. advance_clock seconds=660 and create another payment: the provider is back.\n"
            "6. recent_requests errors_only=true: anything the application got wrong?\n"
            "7. restore_state name=before-outage (or reset_sandbox) and report what you found."
        )

    @server.prompt(
        name="debug_payment",
        title="Find out why a payment ended as it did",
        description="Explain one payment: its cascade, the requests around it, its webhooks.",
    )
    def debug_payment(payment_id: str) -> str:
        return (
            f"Find out why payment {payment_id} is in its current state: call explain_payment "
            f"payment_id={payment_id}, then webhook_deliveries for the events it fired, then "
            "recent_requests errors_only=true for refused calls around it. Answer with the cause "
            "and the change the integration needs."
        )


def run_stdio(server: MCPServer) -> None:
    import anyio

    from payorch_cli.mcp.stdio import serve

    anyio.run(serve, server)


def run_http(server: MCPServer, host: str, port: int) -> None:
    """Streamable HTTP at http://HOST:PORT/mcp; prints `Listening on http://HOST:PORT/mcp` once
    bound (port 0: a free one, the line gives it)."""
    import socket

    import anyio
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    bound = sock.getsockname()[1]
    app = server.streamable_http_app(host=host)
    # An agent's open event stream must not hold a Ctrl-C (or SIGTERM) for long.
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
    http = uvicorn.Server(config)
    sys.stdout.write(f"Listening on http://{host}:{bound}/mcp\n")
    sys.stdout.flush()
    anyio.run(lambda: http.serve(sockets=[sock]))
