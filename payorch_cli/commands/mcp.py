"""`payorch mcp`: the sandbox as an MCP server for AI coding agents (design.md 1.8; the server is
payorch_cli/mcp/). Nothing heavy is imported until the command runs: the embedded server is
started first, so its start-up overlaps the MCP SDK's imports."""

from __future__ import annotations

import os
import re
import signal
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from payorch_cli.options import ApiKey, ExitStatus, resolve

NAMESPACE_ENV = "PAYORCH_NAMESPACE"
# What `${env.NAME}` can name (payorch_cli/scenario/expressions.py).
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _fail(message: str, status: ExitStatus) -> typer.Exit:
    sys.stderr.write(f"payorch mcp: {message}\n")
    return typer.Exit(status)


def _end_on_signals(embedded: Any) -> None:
    """SIGTERM and Ctrl-C end the server at once, the embedded server and its data dir with it.
    At once: the SDK reads stdin in a worker thread that an exception in the main thread would
    wait for forever (until the agent closes the pipe)."""

    def handler(signum: int, frame: Any) -> None:
        if embedded is not None:
            embedded.stop()
        sys.stdout.flush()
        os._exit(0)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, handler)


_Http = Annotated[
    bool,
    typer.Option("--http", help="Serve streamable HTTP on 127.0.0.1 instead of stdio."),
]
_Port = Annotated[
    int,
    typer.Option("--port", min=0, max=65535, help="With --http: the port (0 takes a free one)."),
]
_ReadOnly = Annotated[
    bool,
    typer.Option(
        "--read-only",
        help="Offer only the tools that change nothing, and no secret key in the "
        "credentials resource (a tool filter, not a boundary: see the README).",
    ),
]
_AllowEnv = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-env",
        metavar="NAME",
        help="An environment variable run_scenario's ${env.NAME} may read (repeatable); "
        "default: none.",
        show_default=False,
    ),
]
_ScenarioDirs = Annotated[
    list[Path] | None,
    typer.Option(
        "--scenario-dir",
        metavar="DIR",
        help="A folder run_scenario may read scenario files from (repeatable); default: "
        "the working directory.",
        show_default=False,
    ),
]
_Namespace = Annotated[
    str | None,
    typer.Option(
        "--namespace",
        help="Drive this namespace of the server: every request under /ns/NAME (env "
        "PAYORCH_NAMESPACE).",
        show_default=False,
    ),
]
_BaseUrl = Annotated[
    str | None,
    typer.Option(
        "--base-url",
        help="Drive this running payorch server (env PAYORCH_BASE_URL); default: start an "
        "embedded one in a temporary data dir.",
        show_default=False,
    ),
]


def mcp(
    ctx: typer.Context,
    http: _Http = False,
    port: _Port = 8765,
    read_only: _ReadOnly = False,
    allow_env: _AllowEnv = None,
    scenario_dir: _ScenarioDirs = None,
    namespace: _Namespace = None,
    base_url: _BaseUrl = None,
    api_key: ApiKey = None,
) -> None:
    """Serve the sandbox to an AI agent over MCP.

    Model Context Protocol tools to create and drive payments, break providers, move the clock,
    explain a payment, reset, record and run scenarios. Without --base-url it starts a payorch
    server of its own in a temporary data dir, removed on exit."""
    from payorch_cli.mcp.sandbox import namespace_problem

    options = resolve(ctx, base_url, api_key)
    namespace = namespace or os.environ.get(NAMESPACE_ENV) or None
    if namespace is not None and (problem := namespace_problem(namespace)):
        raise _fail(problem, ExitStatus.USAGE)
    access = _access(allow_env or [], scenario_dir or [])
    target = options.base_url or os.environ.get("PAYORCH_BASE_URL") or None
    embedded = None
    if target is None:
        from payorch_cli.mcp.embedded import EmbeddedServer

        embedded = EmbeddedServer.spawn()  # starts while the SDK is imported below
    _end_on_signals(embedded)
    try:
        _serve(
            embedded,
            target,
            options.api_key,
            namespace,
            access,
            http=http,
            port=port,
            ro=read_only,
        )
    finally:
        if embedded is not None:
            embedded.stop()


def _access(allow_env: list[str], scenario_dirs: list[Path]) -> Any:
    """run_scenario's reach on this host (payorch_cli/mcp/access.py); a bad option exits 2."""
    from payorch_cli.mcp.access import ScenarioAccess

    for name in allow_env:
        if not ENV_NAME.fullmatch(name):
            raise _fail(
                f"--allow-env {name!r} is not an environment variable name", ExitStatus.USAGE
            )
    for folder in scenario_dirs:
        if not folder.is_dir():
            raise _fail(f"--scenario-dir {folder}: no such folder", ExitStatus.USAGE)
    return ScenarioAccess.of(allow_env, scenario_dirs)


def _serve(
    embedded: Any,
    target: str | None,
    api_key: str | None,
    namespace: str | None,
    access: Any,
    *,
    http: bool,
    port: int,
    ro: bool,
) -> None:
    from payorch_cli.client import API_KEY_ENV, DEFAULT_API_KEY
    from payorch_cli.mcp.embedded import EmbeddedServerError
    from payorch_cli.mcp.sandbox import ToolFailure, namespace_sandbox, sandbox_for
    from payorch_cli.mcp.server import build_server, run_http, run_stdio

    key = api_key or os.environ.get(API_KEY_ENV) or DEFAULT_API_KEY
    own_keys = namespace is not None and api_key is None and API_KEY_ENV not in os.environ
    if embedded is not None and own_keys:  # the namespace's keys come from the server
        try:
            target = embedded.wait_ready()
        except EmbeddedServerError as exc:
            raise _fail(str(exc), ExitStatus.ERROR) from None
    elif target is not None:
        from payorch_cli.scenario.suite import check_reachable

        problem = check_reachable(target)
        if problem:
            raise _fail(problem, ExitStatus.UNREACHABLE)
    try:
        if own_keys:
            assert target is not None
            sandbox = namespace_sandbox(target, namespace or "", key)
        else:
            sandbox = sandbox_for(target, key, namespace)
    except ToolFailure as failure:
        raise _fail(f"{failure.code}: {failure.message} {failure.hint}", ExitStatus.ERROR) from None
    if embedded is not None:
        sandbox.embedded = True
        # Served while the embedded server still starts: the first call that needs it waits.
        sandbox.ready = embedded.wait_ready
    server = build_server(sandbox, read_only=ro, access=access)
    try:
        if http:
            try:
                run_http(server, "127.0.0.1", port)
            except OSError as exc:
                from payorch_cli.commands.serve import os_problem

                raise _fail(os_problem("127.0.0.1", port, exc), ExitStatus.ERROR) from None
        else:
            run_stdio(server)
    finally:
        sandbox.close()
