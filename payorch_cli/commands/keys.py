"""`payorch keys`: the fixture credentials, as a table or JSON (design.md 1.2)."""

from __future__ import annotations

import json

import typer

from payorch_cli.options import DEFAULT_DATA, DataDir, Fixtures, Json, resolve


def keys(
    ctx: typer.Context,
    data_dir: DataDir = DEFAULT_DATA,
    fixtures: Fixtures = None,
    as_json: Json = False,
) -> None:
    """List every credential: merchant, shop, environment, publishable and secret key."""
    as_json = resolve(ctx, as_json=as_json).json
    from payorch_cli.credentials import fixture_rows

    del data_dir  # keys come from the fixtures and are the same for every data dir
    rows = fixture_rows(fixtures)
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title="payorch credentials")
    for column in ("merchant", "shop", "env", "publishable key", "secret key"):
        table.add_column(column)
    for row in rows:
        table.add_row(
            f"{row['merchantName']} ({row['merchantId']})",
            row["shopId"] or "(merchant-wide)",
            row["environment"],
            row["publishableKey"] or "-",
            row["secretKey"],
        )
    Console().print(table)
