"""`payorch logs tail`: each API request as the server answers it, live (the request log's
stream, GET /_sim/requests/stream), one line each or one JSON object per line with --json."""

from __future__ import annotations

import re
import signal
import sys
from typing import Annotated, Any

import typer

from payorch_cli import completion
from payorch_cli.options import (
    ApiKey,
    BaseUrl,
    ExitStatus,
    IncludeTools,
    Json,
    api_errors,
    command_group,
    emit,
    include_tools_query,
    resolve,
)

app = command_group("The server's request log (sandbox credentials).")


def _status(value: str) -> str:
    # What GET /_sim/requests takes (its `status` pattern), told before anything is sent.
    if re.fullmatch(r"[1-5]([xX]{2}|[0-9]{2})", value):
        return value
    raise typer.BadParameter(
        f"{value!r} is not a status: write a class (2xx, 4xx, 5xx) or one status (404)"
    )


Status = Annotated[
    str | None,
    typer.Option(
        "--status",
        parser=_status,
        help="A status class (4xx, 5xx...) or one status (404).",
        metavar="4xx|5xx|NNN",
    ),
]
PathPrefix = Annotated[
    str | None,
    typer.Option("--path", help="A path prefix: /payments, /api/v1/payments, /_sim/clock..."),
]
Method = Annotated[str | None, typer.Option("--method", help="An HTTP method (GET, POST...).")]
Merchant = Annotated[
    str | None,
    typer.Option(
        "--merchant",
        help="A merchant id (the key sees its own only).",
        autocompletion=completion.merchants,
    ),
]


def _stop_on_signals() -> None:
    """Ctrl-C and SIGTERM end the tail. SIGINT is installed, not inherited: a shell starts a
    background job with SIGINT ignored (see `payorch listen`)."""

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, signal.default_int_handler)


@app.command("tail")
def tail(
    ctx: typer.Context,
    status: Status = None,
    path: PathPrefix = None,
    method: Method = None,
    merchant: Merchant = None,
    include_tools: IncludeTools = False,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Print each API request as the server answers it, until Ctrl-C.

    One line each, as wide as the terminal: time, method, path (under /api/v1 unless it starts
    with /_sim), status, duration and the whole request id; from about 120 columns also the
    error code, the tool that made it (with --include-tools), merchant and environment,
    simulated time and `replayed` for an Idempotency-Key replay. `payorch logs show REQUEST_ID`
    prints one request with its bodies.
    """
    import json
    import shutil

    from payorch_cli.render.requests import Layout

    options = resolve(ctx, base_url, api_key, as_json)
    client = options.client("logs")
    query = {"status": status, "path": path, "method": method, "merchant": merchant}
    query["includeTools"] = include_tools_query(include_tools)

    layout = Layout.for_width(shutil.get_terminal_size().columns)

    def opened() -> None:
        sys.stderr.write(f"Tailing the request log of {client.base_url} (Ctrl-C to stop).\n")
        sys.stderr.flush()

    _stop_on_signals()
    try:
        with api_errors("logs tail"):
            for summary in client.stream("/_sim/requests/stream", query, on_open=opened):
                line = json.dumps(summary, ensure_ascii=False) if options.json else None
                sys.stdout.write((line or layout.line(summary)) + "\n")
                sys.stdout.flush()
    except KeyboardInterrupt:
        raise typer.Exit(ExitStatus.OK) from None
    sys.stderr.write("payorch logs tail: the server ended the stream (stopped?).\n")
    raise typer.Exit(ExitStatus.ERROR)


@app.command("show")
def show(
    ctx: typer.Context,
    request_id: Annotated[
        str,
        typer.Argument(
            help="A request id (req_...), from an error's "
            "requestId, an X-Request-Id header or `payorch logs tail`.",
            metavar="ID",
            show_default=False,
        ),
    ],
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Print one request of the log with its bodies (secrets masked)."""
    from urllib.parse import quote

    from payorch_cli.render.requests import request_detail

    options = resolve(ctx, base_url, api_key, as_json)
    with api_errors("logs show"):
        detail = options.client().get(f"/_sim/requests/{quote(request_id, safe='')}")
    emit(options, detail, lambda: request_detail(detail))
