"""`payorch keys`: the fixture credentials, as a table or JSON (design.md 1.2).

The command exists to copy keys, so a key is never cut: the table groups the credentials by
merchant (shop, environment, publishable and secret key on one line), and a terminal too narrow
for that line gets one block per credential instead. Nothing is cropped either way: rich prints
with soft wrapping, so a terminal narrower still wraps a line rather than losing its end.

The fixtures' trap credentials (a suspended merchant or shop, a promoted shop's other
environment: keys that authenticate and then refuse every request) carry a `trap:` line saying
what they answer, and a last line says what production keys do differently; --json keeps the
fixed shape of design.md 1.2.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import replace
from itertools import groupby
from typing import TYPE_CHECKING, Any

import typer

from payorch_cli.client import BASE_URL_ENV
from payorch_cli.credentials import TrapKey, trap_key
from payorch_cli.options import (
    DEFAULT_DATA,
    ApiKey,
    BaseUrl,
    DataDir,
    Fixtures,
    Json,
    NamespaceName,
    api_errors,
    resolve,
)

if TYPE_CHECKING:
    from rich.text import Text

GAP = "  "
MERCHANT_WIDE = "(merchant-wide)"
HEADERS = ("shop", "env", "publishable key", "secret key")
PRODUCTION_NOTE = (
    "Production keys (env production) get outcomes from the simulated providers (declines, "
    "outages), never from Sandbox-Simulate or `payorch simulate`, and the control plane "
    "(/_sim) refuses them, `payorch trace` aside."
)


def _cells(row: dict[str, Any]) -> tuple[str, str, str, str]:
    return (
        row["shopId"] or MERCHANT_WIDE,
        row["environment"],
        row["publishableKey"] or "-",
        row["secretKey"],
    )


def _widths(rows: list[dict[str, Any]]) -> list[int]:
    cells = [HEADERS, *(_cells(row) for row in rows)]
    return [max(len(line[i]) for line in cells) for i in range(len(HEADERS))]


def table_width(rows: list[dict[str, Any]]) -> int:
    """Columns the table needs: an indent, then the four cells with their gaps."""
    widths = _widths(rows)
    return len(GAP) + sum(widths) + len(GAP) * (len(widths) - 1)


def _merchant(row: dict[str, Any]) -> tuple[str, str]:
    return row["merchantName"], row["merchantId"]


def _wrapped(text: str, width: int, indent: str, style: str) -> list[Text]:
    from rich.text import Text

    from payorch_cli.render.layout import wrapped_text

    return [Text(line, style=style) for line in wrapped_text(indent + text, width).split("\n")]


def _row_lines(row: dict[str, Any], widths: list[int] | None, width: int) -> list[Text]:
    """One credential: a table line with `widths`, else a block of three lines or more."""
    from rich.text import Text

    shop, environment, publishable, secret = _cells(row)
    if widths is not None:
        cells = (shop, environment, publishable, secret)
        line = GAP + GAP.join(c.ljust(w) for c, w in zip(cells, widths, strict=True))
        return [Text(line.rstrip())]
    return [
        Text.assemble(GAP, (shop, "cyan"), " · ", environment),
        *_key_lines("publishable", publishable, width),
        *_key_lines("secret", secret, width),
    ]


def credential_lines(
    rows: list[dict[str, Any]], width: int, traps: Mapping[TrapKey, str] | None = None
) -> list[Text]:
    """The credentials grouped by merchant: a table when `width` holds a credential's line,
    else one block per credential; a trap's line under it."""
    from rich.text import Text

    traps = traps or {}
    widths = _widths(rows)
    as_table = width >= table_width(rows)
    lines = [Text("payorch credentials", style="bold"), Text("")]
    for (name, merchant_id), group in groupby(rows, key=_merchant):
        lines.append(Text.assemble((name, "bold"), "  ", (merchant_id, "dim")))
        if as_table:
            header = GAP + GAP.join(h.ljust(w) for h, w in zip(HEADERS, widths, strict=True))
            lines.append(Text(header.rstrip(), style="dim"))
        for row in group:
            lines.extend(_row_lines(row, widths if as_table else None, width))
            trap = traps.get(trap_key(row))
            if trap is not None:
                lines.extend(_wrapped(f"trap: {trap}", width, GAP * 2, "yellow"))
        lines.append(Text(""))
    return lines[:-1]


def _key_lines(label: str, key: str, width: int) -> list[Text]:
    """`publishable KEY`, or the label and then the key alone on the next line where a namespace's
    longer key would pass the width: a key is copied, never folded."""
    from rich.text import Text

    head = GAP * 2 + label.ljust(len("publishable ")) + key
    if len(head) <= width:
        return [Text.assemble(GAP * 2, (label.ljust(len("publishable ")), "dim"), key)]
    return [Text.assemble(GAP * 2, (label, "dim")), Text(GAP * 2 + key)]


def keys(
    ctx: typer.Context,
    data_dir: DataDir = DEFAULT_DATA,
    fixtures: Fixtures = None,
    as_json: Json = False,
    namespace: NamespaceName = None,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
) -> None:
    """List every credential with its publishable and secret key.

    Merchant, shop and environment of each; the same for every data dir. With --namespace: that
    namespace's keys, asked of the server at --base-url (or PAYORCH_BASE_URL) when one is given,
    else derived from the data dir's namespace secret.
    """
    options = resolve(ctx, base_url, api_key, as_json)
    as_json, namespace = options.json, namespace or options.namespace
    from payorch_cli.credentials import fixture_rows, namespace_rows
    from simulator.fixture_loader import FixtureError

    try:
        if namespace and namespace != "default":
            if options.base_url or os.environ.get(BASE_URL_ENV):
                with api_errors("keys"):
                    client = replace(options, namespace=None).client()
                    rows = client.namespace_call("GET", namespace)["keys"]
            else:
                rows = namespace_rows(data_dir, fixtures, namespace)
        else:
            rows = fixture_rows(fixtures)  # the same for every data dir
    except FixtureError as exc:
        typer.echo(f"payorch keys: bad fixtures: {exc}", err=True)
        raise typer.Exit(2) from None
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    from rich.console import Console
    from rich.text import Text

    from payorch_cli.credentials import traps
    from payorch_cli.render.layout import terminal_width

    console = Console()
    width = terminal_width()
    lines = credential_lines(rows, width, traps(fixtures))
    if any(row["environment"] == "production" for row in rows):
        lines += [Text(""), *_wrapped(PRODUCTION_NOTE, width, "", "dim")]
    for line in lines:
        console.print(line, soft_wrap=True)
