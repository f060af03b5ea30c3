"""What `payorch serve` prints under its `Listening on ...` line on a terminal: where to go
next. Pure: the server's URL and the fixture credentials in, lines of text out."""

from __future__ import annotations

from typing import Any

from payorch_cli.client import DEFAULT_API_KEY, DEFAULT_BASE_URL

INDENT = " " * 16  # under the value column


def sandbox_key(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The key to start with: the CLI's default key when the fixtures have it, else the first
    sandbox secret key of a shop, else any sandbox secret key."""
    sandbox = [row for row in rows if row["environment"] == "sandbox" and row["secretKey"]]
    for row in sandbox:
        if row["secretKey"] == DEFAULT_API_KEY:
            return row
    with_shop = [row for row in sandbox if row["shopId"]]
    first = with_shop or sandbox
    return first[0] if first else None


def next_steps(url: str, rows: list[dict[str, Any]], fixtures: str | None = None) -> str:
    """The lines after `Listening on URL`: a key and a first call, the TUI, the request log, the
    landing page and docs, how to stop. Commands name `--base-url` only off the default URL."""
    row = sandbox_key(rows)
    at = "" if url == DEFAULT_BASE_URL else f" --base-url {url}"
    lines = ["", "Next steps (--quiet leaves them out):"]
    # Each line fits 80 columns (a URL with a 5-digit port included): what does not is put on
    # a line of its own, and the first call is continued with a backslash so it pastes whole.
    if row is not None:
        owner = row["shopId"] or row["merchantId"]
        every = "payorch keys" + (f" --fixtures {fixtures}" if fixtures else "")
        lines += [
            f"  Sandbox key   {row['secretKey']}  ({owner})",
            f"{INDENT}every key: {every}",
            f"  Try it        curl -s {url}/api/v1/ping \\",
            f"{INDENT}  -H 'Authorization: Bearer {row['secretKey']}'",
        ]
    lines += [
        f"  Live console  payorch tui{at}",
        f"  Each request  payorch logs tail{at}",
        f"{INDENT}or serve with --log-requests",
        f"  Docs          {url}/",
        f"  OpenAPI       {url}/api/v1/openapi.json",
        "  Stop          Ctrl-C",
    ]
    return "\n".join(lines)
