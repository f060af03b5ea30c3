"""`payorch methods [--country] [--channel] [--json]`: which payment methods exist for the shop
of the key, and what each needs (GET /payment-methods, and GET /_sim/payment-methods for the
buyer fields each method asks for)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from payorch_cli.options import ApiKey, BaseUrl, Json, api_errors, emit, resolve


def methods(
    ctx: typer.Context,
    country: Annotated[
        str | None, typer.Option("--country", help="ISO-2 or ISO-3, e.g. MX or BRA.")
    ] = None,
    channel: Annotated[
        str | None, typer.Option("--channel", help="ONLINE, CASH or CREDIT_CARD.")
    ] = None,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """List the payment methods of the shop and what each needs.

    One line each: the paymentMethodId to send, rail, country, channel, the amount limits in
    the local currency, the buyer fields it asks for (needs) and whether it is routable.
    --json prints the listing's entries with `requiredFields`, `flow` and `dueHours` added.
    """
    from payorch_cli.client import ApiError
    from payorch_cli.render.methods import methods_table

    options = resolve(ctx, base_url, api_key, as_json)
    client = options.user_client()
    query = {"country": country, "channel": channel.upper() if channel else None}
    with api_errors("methods"):
        listing = client.get("/payment-methods", **{k: v for k, v in query.items() if v})
        try:
            found = client.get("/_sim/payment-methods")["data"]
        except ApiError as exc:
            if exc.status == 0:
                raise
            found = []  # a production key may not ask the control plane: needs unknown
    requirements: dict[str, dict[str, Any]] = {item["paymentMethodId"]: item for item in found}
    rows = [
        {**entry, **_extra(requirements.get(entry["paymentMethodId"]))}
        for entry in listing.get("methods") or []
    ]
    emit(options, rows, lambda: methods_table(listing, requirements))


def _extra(requirement: dict[str, Any] | None) -> dict[str, Any]:
    if requirement is None:
        return {"flow": None, "requiredFields": None, "dueHours": None}
    return {k: requirement[k] for k in ("flow", "requiredFields", "dueHours")}
