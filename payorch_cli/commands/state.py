"""`payorch state save|restore|list|delete`: named saved states of the whole server, the store
and the clock (/_sim/state; design.md 1.5)."""

from __future__ import annotations

import re
from typing import Annotated, Any

import typer

from payorch_cli import completion
from payorch_cli.options import ApiKey, BaseUrl, Json, api_errors, command_group, emit, resolve

app = command_group(
    "Save and restore named snapshots of the whole server.\n\nEvery stored object and the clock "
    "under a name, put back later without a restart (sandbox credentials)."
)

# The server's rule for a saved state's name (its OpenAPI document), checked here too so that a
# bad name is a usage error (exit 2) before anything is sent.
NAME_PATTERN = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}")


def _state_name(value: str) -> str:
    if not NAME_PATTERN.fullmatch(value):
        raise typer.BadParameter(
            f"{value!r}: 1 to 64 characters from A-Z a-z 0-9 . _ -, not starting with a dot"
        )
    return value


Name = Annotated[
    str,
    typer.Argument(
        help="1 to 64 characters from A-Z a-z 0-9 . _ -, not starting with a dot.",
        parser=_state_name,
        metavar="NAME",
        autocompletion=completion.saved_states,
    ),
]
Overwrite = Annotated[
    bool, typer.Option("--overwrite", help="Replace a saved state of the same name.")
]


def _size(size_bytes: int) -> str:
    if size_bytes < 1024 * 1024:
        return f"{size_bytes / 1024:.1f} KiB"
    return f"{size_bytes / (1024 * 1024):.1f} MiB"


@app.command("save")
def save(
    ctx: typer.Context,
    name: Name,
    overwrite: Overwrite = False,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Save everything the server holds and its clock as NAME.

    Kept in its data dir.
    """
    options = resolve(ctx, base_url, api_key, as_json)
    with api_errors("state save"):
        saved = options.client().save_state(name, overwrite=overwrite)
    emit(
        options,
        saved,
        f"Saved {saved['name']}: {_transactions(saved['transactions'])}, simulated time "
        f"{saved['simulatedAt']}, {_size(saved['sizeBytes'])}.",
    )


def _transactions(count: int) -> str:
    return "1 transaction" if count == 1 else f"{count} transactions"


@app.command("restore")
def restore(
    ctx: typer.Context,
    name: Name,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Put the server back to the saved state NAME.

    What was stored since goes, the clock takes
    the saved offset again. Access tokens in use stay valid."""
    options = resolve(ctx, base_url, api_key, as_json)
    with api_errors("state restore"):
        restored = options.client().restore_state(name)
    emit(
        options,
        restored,
        f"Restored {restored['name']}: {restored['transactions']} transactions, clock "
        f"{restored['clock']['now']}.",
    )


@app.command("list")
def list_states(
    ctx: typer.Context, base_url: BaseUrl = None, api_key: ApiKey = None, as_json: Json = False
) -> None:
    """List the saved states: name, time, transactions, size.

    Also the simulated time of each.
    """
    options = resolve(ctx, base_url, api_key, as_json)
    with api_errors("state list"):
        states = options.client().list_states()
    emit(options, {"data": states}, lambda: _table(states))


def _table(states: list[dict[str, Any]]) -> Any:
    if not states:
        return "No saved states. Save one with `payorch state save NAME`."
    from payorch_cli.render.layout import Column, Columns

    columns = (
        Column("name", style="cyan"),
        Column("saved at"),
        Column("transactions", right=True),
        Column("size", right=True, spill=True),
        Column("simulated at", spill=True),
        Column("version", spill=True),
    )
    rows = [
        (
            state["name"],
            _second(state["createdAt"]),
            str(state["transactions"]),
            _size(state["sizeBytes"]),
            _second(state["simulatedAt"]),
            str(state["version"]),
        )
        for state in states
    ]
    return Columns(columns, rows)


def _second(stamp: str) -> str:
    return stamp[:19].replace("T", " ")


@app.command("delete")
def delete(
    ctx: typer.Context,
    name: Name,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Delete the saved state NAME."""
    options = resolve(ctx, base_url, api_key, as_json)
    with api_errors("state delete"):
        options.client().delete_state(name)
    emit(options, {"deleted": name}, f"Deleted {name}.")
