"""`payorch trace ID [--json]`: the internal cascade trace of a payment or payout (design 1.5)."""

from __future__ import annotations

from typing import Annotated

import typer

from payorch_cli.options import ApiKey, BaseUrl, Json, api_errors, emit, resolve


def trace(
    ctx: typer.Context,
    subject_id: Annotated[
        str,
        typer.Argument(
            help="A payment's transaction id (TXN-…) or a payout's id (po_…).", metavar="ID"
        ),
    ],
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Show what the API hides about a payment or payout.

    Every provider the cascade tried and
    its answer, the provider chosen, callbacks received or ignored, reconciliation polls, state
    changes, events and their webhook deliveries, in simulated time. Any secret key of the
    owning merchant reads it, sandbox or production."""
    from payorch_cli.render.trace import trace_path, trace_renderable

    options = resolve(ctx, base_url, api_key, as_json)
    with api_errors("trace"):
        doc = options.client().get(trace_path(subject_id))
    emit(options, doc, lambda: trace_renderable(doc))
