"""`payorch payouts list|get`: the merchant's sent payouts (GET /me/payout/send[/ID]). Sending
one stays with the API (its recipient fields differ per rail); `payorch simulate payout` drives a
sandbox one to its outcome."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from payorch_cli.options import (
    ApiKey,
    BaseUrl,
    Json,
    Limit,
    Offset,
    api_errors,
    command_group,
    emit,
    resolve,
)

app = command_group("Payouts: list and get the payouts you sent.")


class Status(StrEnum):
    processing = "processing"
    completed = "completed"
    failed = "failed"


@app.command("list")
def list_(
    ctx: typer.Context,
    status: Annotated[Status | None, typer.Option("--status", help="Only this status.")] = None,
    method_id: Annotated[
        str | None, typer.Option("--method-id", help="A payout method id (sbx_po_mx_spei...).")
    ] = None,
    limit: Limit = 20,
    offset: Offset = 0,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """List sent payouts, newest first."""
    from payorch_cli.render.resources import payouts_table

    options = resolve(ctx, base_url, api_key, as_json)
    query = {
        "status": status.value if status else None,
        "methodId": method_id,
        "limit": limit,
        "offset": offset,
    }
    with api_errors("payouts list"):
        page = options.user_client().get("/me/payout/send", **query)
    emit(options, page, lambda: payouts_table(page))


@app.command("get")
def get(
    ctx: typer.Context,
    payout_id: Annotated[str, typer.Argument(metavar="ID", help="po_...")],
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Print one payout."""
    from urllib.parse import quote

    from payorch_cli.render.resources import payout_view

    options = resolve(ctx, base_url, api_key, as_json)
    with api_errors("payouts get"):
        result = options.user_client().get(f"/me/payout/send/{quote(payout_id, safe='')}")
    emit(options, result, lambda: payout_view(result))
