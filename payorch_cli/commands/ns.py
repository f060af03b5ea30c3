"""`payorch ns create|list|show|delete NAME`: namespaces, isolated worlds in one server
(/_sim/namespaces; design.md 1.6)."""

from __future__ import annotations

import re
import sys
from typing import Annotated, Any

import typer

from payorch.vocabulary import NAMESPACE_NAME_RULE
from payorch_cli import completion
from payorch_cli.options import (
    ApiKey,
    BaseUrl,
    ExitStatus,
    Json,
    api_errors,
    command_group,
    emit,
    resolve,
)

app = command_group(
    "Namespaces: isolated worlds in one server.\n\nEach has its own keys, data, clock, "
    "providers and request log (sandbox credentials)."
)

Name = Annotated[
    str,
    typer.Argument(
        help=f"The namespace: {NAMESPACE_NAME_RULE}.", autocompletion=completion.namespaces
    ),
]
Idle = Annotated[
    int | None,
    typer.Option(
        "--idle",
        min=1,
        help="Delete the namespace once nobody used it this many seconds (real time).",
        show_default=False,
    ),
]


def _checked(name: str, command: str) -> str:
    if not re.fullmatch(NAMESPACE_NAME_RULE, name):
        sys.stderr.write(
            f"payorch ns {command}: {name!r} is not a namespace name: it must match "
            f"{NAMESPACE_NAME_RULE} (lowercase letters, digits and '-').\n"
        )
        raise typer.Exit(ExitStatus.USAGE)
    return name


def _summary(namespace: dict[str, Any]) -> str:
    idle = namespace.get("idleSeconds")
    lifetime = f", deleted after {idle} s unused" if idle else ""
    created = namespace.get("createdAt") or "with the server"
    return f"{namespace['name']}  created {created}{lifetime}"


def _with_keys(namespace: dict[str, Any], headline: str) -> Any:
    def render() -> Any:
        from rich.console import Group
        from rich.text import Text

        from payorch_cli.commands.keys import credential_lines
        from payorch_cli.render.layout import terminal_width

        lines = credential_lines(namespace["keys"], terminal_width())[2:]  # without the title
        prefix = f"/ns/{namespace['name']}"
        return Group(
            Text(headline, style="bold"),
            Text(f"Its paths: {prefix}/api/v1/..., {prefix}/_sim/...; or just use its keys."),
            Text(""),
            *lines,
        )

    return render


@app.command("create")
def create(
    ctx: typer.Context,
    name: Name,
    idle: Idle = None,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Create namespace NAME and print its keys.

    An existing one is shown unchanged."""
    options = resolve(ctx, base_url, api_key, as_json)
    body = {"idleSeconds": idle} if idle is not None else None
    with api_errors("ns create"):
        namespace = options.client().namespace_call("PUT", _checked(name, "create"), body)
    emit(options, namespace, _with_keys(namespace, f"Namespace {_summary(namespace)}"))


@app.command("show")
def show(
    ctx: typer.Context,
    name: Name,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Show namespace NAME with its keys."""
    options = resolve(ctx, base_url, api_key, as_json)
    with api_errors("ns show"):
        namespace = options.client().namespace_call("GET", _checked(name, "show"))
    emit(options, namespace, _with_keys(namespace, f"Namespace {_summary(namespace)}"))


@app.command("list")
def list_namespaces(
    ctx: typer.Context, base_url: BaseUrl = None, api_key: ApiKey = None, as_json: Json = False
) -> None:
    """The namespaces of the server.

    With a key of `default`: all of them; with a namespace's key: that one."""
    options = resolve(ctx, base_url, api_key, as_json)
    with api_errors("ns list"):
        listed = options.client().namespace_call("GET")
    rows = listed.get("data", []) if isinstance(listed, dict) else []
    emit(options, listed, lambda: _table(rows))


def _table(namespaces: list[dict[str, Any]]) -> Any:
    from payorch_cli.render.layout import Column, Columns

    columns = (
        Column("name", style="cyan"),
        Column("created"),
        Column("memory", spill=True),
        Column("deleted after", spill=True),
    )
    rows = [
        (
            str(n["name"]),
            str(n.get("createdAt") or "with the server"),
            "" if n.get("loaded") or n["name"] == "default" else "not loaded",
            f"{n['idleSeconds']} s unused" if n.get("idleSeconds") else "",
        )
        for n in namespaces
    ]
    return Columns(columns, rows)


@app.command("delete")
def delete(
    ctx: typer.Context,
    name: Name,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Delete namespace NAME and everything in it.

    `default` cannot be deleted (`payorch reset` empties it)."""
    options = resolve(ctx, base_url, api_key, as_json)
    with api_errors("ns delete"):
        options.client().namespace_call("DELETE", _checked(name, "delete"))
    emit(options, {"name": name, "deleted": True}, f"Deleted namespace {name}.")
