"""`payorch reset`: the server back to its fixtures and the clock to real time, without a restart
(POST /_sim/reset; design.md 1.5)."""

from __future__ import annotations

import typer

from payorch_cli.options import ApiKey, BaseUrl, Json, api_errors, emit, resolve


def reset(
    ctx: typer.Context, base_url: BaseUrl = None, api_key: ApiKey = None, as_json: Json = False
) -> None:
    """Put the server back to its fixtures; the keys stay valid.

    Every payment, payout, subscription, rotated secret, token, job and Idempotency-Key record goes,
    the request log is emptied and the clock returns to real time. The fixture keys stay valid;
    access tokens issued before do not."""
    options = resolve(ctx, base_url, api_key, as_json)
    client = options.client()
    with api_errors("reset"):
        result = client.post("/_sim/reset")
    now = result.get("clock", {}).get("now", "?") if isinstance(result, dict) else "?"
    emit(options, result, f"Reset {client.base_url}: back to its fixtures, clock {now}.")
