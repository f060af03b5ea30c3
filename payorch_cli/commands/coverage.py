"""`payorch coverage`: which state-table rows, event types and error codes the server produced
since it started or was last reset (GET /_sim/coverage), the ones never reached in red."""

from __future__ import annotations

from typing import Annotated

import typer

from payorch_cli.options import (
    ApiKey,
    BaseUrl,
    IncludeTools,
    Json,
    api_errors,
    emit,
    include_tools_query,
    resolve,
)


def coverage(
    ctx: typer.Context,
    all_errors: Annotated[
        bool, typer.Option("--all-errors", help="List the error codes never answered too.")
    ] = False,
    include_tools: IncludeTools = False,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Show which states, events and errors were reached.

    Every row of the spec's state tables and every event type with how often it was reached, and
    the error codes it answered with: your merchant's (the key's), without what payorch's own
    tools' requests reached unless asked."""
    from payorch_cli.render.coverage import coverage_tables

    options = resolve(ctx, base_url, api_key, as_json)
    with api_errors("coverage"):
        report = options.client().get(
            "/_sim/coverage", includeTools=include_tools_query(include_tools)
        )
    emit(options, report, lambda: coverage_tables(report, all_errors=all_errors))
