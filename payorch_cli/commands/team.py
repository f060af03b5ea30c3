"""`payorch team ...`: a team server's owners, tokens, quotas and audit trail (design.md 1.10).

Each command sends a team token: `--token` (env PAYORCH_TEAM_TOKEN), else `--api-key`; the
admin token for everything but `whoami` and an owner's own `audit`."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

import typer

from payorch.vocabulary import NAMESPACE_NAME_RULE
from payorch_cli.options import ApiKey, BaseUrl, Json, api_errors, command_group, emit, resolve

TOKEN_ENV = "PAYORCH_TEAM_TOKEN"

app = command_group(
    "A team server's owners, tokens, quotas and audit.\n\npayorch serve --team; the admin "
    "token manages owners and their tokens, an owner reads its own audit trail."
)
tokens_app = command_group("Owner tokens: create, list, revoke (admin).")
quota_app = command_group("Owners' quotas (admin).")
app.add_typer(tokens_app, name="token")
app.add_typer(quota_app, name="quota")

Token = Annotated[
    str | None,
    typer.Option(
        "--token",
        envvar=TOKEN_ENV,
        help="The admin or owner token (pat_... / pot_...); default: --api-key.",
        show_default=False,
    ),
]


def _call(
    ctx: typer.Context,
    command: str,
    method: str,
    path: str,
    body: Any = None,
    *,
    token: str | None,
    base_url: str | None,
    api_key: str | None,
    as_json: bool,
    query: dict[str, Any] | None = None,
) -> tuple[Any, Any]:
    options = resolve(ctx, base_url, token or api_key, as_json)
    with api_errors(command):
        client = options.client()
        # Outside any namespace's prefix: the team routes are the server's.
        client._prefix = client._root
        return options, client.request(method, path, body, query=query)
    raise AssertionError("api_errors exits")  # pragma: no cover


@tokens_app.command("create")
def token_create(
    ctx: typer.Context,
    owner: Annotated[str, typer.Argument(help=f"The owner: {NAMESPACE_NAME_RULE}.")],
    label: Annotated[
        str | None, typer.Option("--label", help="Names the token in the audit trail.")
    ] = None,
    kind: Annotated[
        str, typer.Option("--kind", help="Who uses it: person, ci or agent.")
    ] = "person",
    max_namespaces: Annotated[
        int | None,
        typer.Option("--max-namespaces", min=0, help="Set the owner's quota of namespaces."),
    ] = None,
    expires_in: Annotated[
        int | None,
        typer.Option("--expires-in", min=1, metavar="SECONDS", help="Expire the token after this."),
    ] = None,
    token: Token = None,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Issue an owner token, printed this once.

    OWNER is made if new."""
    body: dict[str, Any] = {"owner": owner, "kind": kind}
    for field, value in (
        ("label", label),
        ("maxNamespaces", max_namespaces),
        ("expiresInSeconds", expires_in),
    ):
        if value is not None:
            body[field] = value
    options, created = _call(
        ctx,
        "team token create",
        "POST",
        "/_sim/team/tokens",
        body,
        token=token,
        base_url=base_url,
        api_key=api_key,
        as_json=as_json,
    )
    emit(
        options,
        created,
        f"{created['token']}\n(token {created['id']} of owner {created['owner']}, "
        f"{created['kind']} {created['label']!r}: shown this once)",
    )


@tokens_app.command("list")
def token_list(
    ctx: typer.Context,
    token: Token = None,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Every owner token (never the tokens themselves)."""
    options, listed = _call(
        ctx,
        "team token list",
        "GET",
        "/_sim/team/tokens",
        token=token,
        base_url=base_url,
        api_key=api_key,
        as_json=as_json,
    )
    lines = [
        f"{t['id']}  {t['owner']}  {t['kind']}  {t['label']}"
        + ("  revoked" if t["revoked"] else "")
        + (f"  expires {t['expiresAt']}" if t["expiresAt"] else "")
        for t in listed["data"]
    ]
    emit(options, listed, "\n".join(lines) or "No owner tokens.")


@tokens_app.command("revoke")
def token_revoke(
    ctx: typer.Context,
    token_id: Annotated[str, typer.Argument(metavar="ID", help="The token's id (tok_...).")],
    token: Token = None,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Revoke an owner token.

    It is refused (401) from now on."""
    options, revoked = _call(
        ctx,
        "team token revoke",
        "DELETE",
        f"/_sim/team/tokens/{quote(token_id, safe='')}",
        token=token,
        base_url=base_url,
        api_key=api_key,
        as_json=as_json,
    )
    emit(options, revoked, f"Revoked {revoked['id']} ({revoked['owner']}).")


@app.command("owners")
def owners(
    ctx: typer.Context,
    token: Token = None,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """The owners, their quotas and namespaces."""
    options, listed = _call(
        ctx,
        "team owners",
        "GET",
        "/_sim/team/owners",
        token=token,
        base_url=base_url,
        api_key=api_key,
        as_json=as_json,
    )
    lines = [
        f"{o['name']}  {o['namespaces']}/{o['maxNamespaces']} namespaces" for o in listed["data"]
    ]
    emit(options, listed, "\n".join(lines) or "No owners.")


@quota_app.command("set")
def quota_set(
    ctx: typer.Context,
    owner: Annotated[str, typer.Argument(help="An owner with a token.")],
    max_namespaces: Annotated[
        int, typer.Option("--max-namespaces", min=0, help="The owner's namespaces at most.")
    ],
    token: Token = None,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Set an owner's quota.

    Its existing namespaces stay; new ones must fit."""
    options, view = _call(
        ctx,
        "team quota set",
        "PUT",
        f"/_sim/team/owners/{quote(owner, safe='')}",
        {"maxNamespaces": max_namespaces},
        token=token,
        base_url=base_url,
        api_key=api_key,
        as_json=as_json,
    )
    emit(options, view, f"{view['name']}: at most {view['maxNamespaces']} namespaces.")


@app.command("whoami")
def whoami(
    ctx: typer.Context,
    token: Token = None,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Who the token is: admin, or an owner with its quota."""
    options, view = _call(
        ctx,
        "team whoami",
        "GET",
        "/_sim/team/whoami",
        token=token,
        base_url=base_url,
        api_key=api_key,
        as_json=as_json,
    )
    quota = (
        f", {view['namespaces']}/{view['maxNamespaces']} namespaces"
        if "maxNamespaces" in view
        else ""
    )
    emit(options, view, f"{view['kind']} {view['label']} (owner {view['owner']}){quota}")


@app.command("audit")
def audit(
    ctx: typer.Context,
    namespace: Annotated[
        str | None, typer.Option("--namespace", help="Only this namespace's entries.")
    ] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Only entries at or after this ISO time.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="The latest N entries.")] = 1000,
    token: Token = None,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """The audit trail (an owner's: of its own namespaces).

    The admin reads every entry; an owner those of its own namespaces."""
    query: dict[str, Any] = {"limit": limit}
    if namespace is not None:
        query["namespace"] = namespace
    if since is not None:
        query["since"] = since
    options, listed = _call(
        ctx,
        "team audit",
        "GET",
        "/_sim/audit",
        token=token,
        base_url=base_url,
        api_key=api_key,
        as_json=as_json,
        query=query,
    )
    lines = []
    for entry in listed["data"]:
        who = entry.get("who") or {}
        lines.append(
            f"{entry['at']}  {who.get('kind', '?')}:{who.get('label', '?')}  {entry['action']}"
            f"  {entry.get('namespace') or '-'}  {entry['status']} {entry['outcome']}"
        )
    emit(options, listed, "\n".join(lines) or "No entries.")
