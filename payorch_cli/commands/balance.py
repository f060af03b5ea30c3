"""`payorch balance`: the pay-in balance (GET /me/balance), or with --payout the payout
balances per currency (GET /me/payout/balance)."""

from __future__ import annotations

from typing import Annotated

import typer

from payorch_cli.options import ApiKey, BaseUrl, Json, api_errors, emit, resolve


def balance(
    ctx: typer.Context,
    payout: Annotated[
        bool, typer.Option("--payout", help="The payout balances per currency instead.")
    ] = False,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Print the merchant's balance (or the payout balances).

    The pay-in balance: available, pending, frozen, reserve and the fee summary."""
    from payorch_cli.render.resources import balance_view, payout_balances_table

    options = resolve(ctx, base_url, api_key, as_json)
    with api_errors("balance"):
        result = options.user_client().get("/me/payout/balance" if payout else "/me/balance")
    emit(options, result, lambda: payout_balances_table(result) if payout else balance_view(result))
