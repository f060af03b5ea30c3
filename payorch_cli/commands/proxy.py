"""`payorch proxy`: a recording proxy in front of a real sandbox (design.md 1.9); the work is in
payorch_cli/proxy/ (server, recorder, redaction, scenario)."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

import typer

from payorch_cli.options import ExitStatus, positive_seconds

DEFAULT_PORT = 8081


def _fail(message: str, status: ExitStatus = ExitStatus.USAGE) -> None:
    sys.stderr.write(f"payorch proxy: {message}\n")
    raise typer.Exit(status)


def _http_url(option: str, value: str) -> str:
    """An http(s) URL with a host, without its trailing slash; anything else exits 2."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        _fail(f"{option} {value!r} is not an http:// or https:// URL with a host")
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        _fail(f"{option} {value!r} has a port that is not a number from 0 to 65535")
    if parts.query or parts.fragment:
        _fail(f"{option} {value!r}: give the base URL, without a query or fragment")
    return value.rstrip("/")


def _out_dir(out: Path | None) -> Path:
    from payorch_cli.recording.format import EXCHANGES_FILE

    if out is None:
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        out = Path(f"payorch-recording-{stamp}")
    if out.exists() and not out.is_dir():
        _fail(f"--out {out}: is a file; give a directory")
    if (out / EXCHANGES_FILE).exists():
        _fail(f"--out {out}: already holds a recording ({EXCHANGES_FILE}); give another directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _fail(f"--out {out}: cannot create it ({exc.strerror or exc})")
    return out


def proxy(
    upstream: Annotated[
        str,
        typer.Option(
            "--upstream",
            help="The sandbox to forward to (https://sandbox.example, or a payorch serve URL).",
            show_default=False,
        ),
    ],
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="The proxy's port (0: a free one).")
    ] = DEFAULT_PORT,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="The recording's directory (default: payorch-recording-YYYYMMDD-HHMMSS here).",
            show_default=False,
        ),
    ] = None,
    webhook_secret: Annotated[
        str | None,
        typer.Option(
            "--webhook-secret",
            help="The signing secret of the subscription you register at the proxy's receiver: "
            "each delivery is recorded as valid or invalid.",
            show_default=False,
        ),
    ] = None,
    forward_webhooks_to: Annotated[
        str | None,
        typer.Option(
            "--forward-webhooks-to",
            help="Your own webhook receiver: each delivery is forwarded there unchanged.",
            show_default=False,
        ),
    ] = None,
    redact: Annotated[
        list[str] | None,
        typer.Option(
            "--redact",
            help="A further JSON key, query parameter or header to redact (repeatable).",
            show_default=False,
        ),
    ] = None,
    insecure: Annotated[
        bool,
        typer.Option(
            "--insecure",
            help="Do not verify the upstream's TLS certificate (a self-signed sandbox). Anyone "
            "on the path can then read and change the traffic.",
        ),
    ] = False,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            parser=positive_seconds,
            help="Seconds to wait for the upstream (to connect, and between reads) before 504.",
        ),
    ] = 30.0,
    body_limit: Annotated[
        int,
        typer.Option(
            "--body-limit",
            min=0,
            help="Bytes of each body kept in the recording; past it, recorded cut (truncated).",
        ),
    ] = 1024 * 1024,
) -> None:
    """Proxy a real sandbox, recording each exchange.

    Point your code (or `--base-url`) at the proxy. On stop (Ctrl-C, SIGTERM) and on flush
    (POST /_proxy/flush, or SIGUSR1) it writes exchanges.jsonl and scenario.yaml in --out."""
    upstream = _http_url("--upstream", upstream)
    if forward_webhooks_to is not None:
        forward_webhooks_to = _http_url("--forward-webhooks-to", forward_webhooks_to)
    if webhook_secret is not None and not webhook_secret.strip():
        _fail("--webhook-secret is empty")
    fields = tuple(redact or ())
    for field in fields:
        if not field.strip():
            _fail("--redact needs a field name (a JSON key, query parameter or header)")
    directory = _out_dir(out)
    _run(
        upstream,
        port,
        directory,
        webhook_secret,
        forward_webhooks_to,
        fields,
        insecure,
        timeout,
        body_limit,
    )


def _run(
    upstream: str,
    port: int,
    directory: Path,
    webhook_secret: str | None,
    forward_to: str | None,
    fields: tuple[str, ...],
    insecure: bool,
    timeout: float,
    body_limit: int,
) -> None:
    import asyncio
    import errno
    from importlib import metadata

    from yarl import URL

    from payorch_cli.proxy.server import FLUSH_PATH, WEBHOOK_PATH, Config, Proxy
    from payorch_cli.proxy.writer import Settings, Writer
    from payorch_cli.recording.format import EXCHANGES_FILE, SCENARIO_FILE

    version = f"payorch {metadata.version('payorch')}"
    # What is printed and recorded names the upstream without any user:password it carries.
    shown = str(URL(upstream).with_user(None))
    config = Config(
        upstream, port, directory, webhook_secret, forward_to, insecure, timeout, body_limit
    )

    def say(line: str) -> None:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def ready(bound: int) -> None:
        base = f"http://127.0.0.1:{bound}"
        lines = [
            f"Listening on {base}",
            f"Forwarding to {shown}",
            f"Webhook receiver: {base}{WEBHOOK_PATH} (register it upstream)",
            f"Recording to {directory / EXCHANGES_FILE}; the scenario goes to "
            f"{directory / SCENARIO_FILE} on stop or flush (POST {base}{FLUSH_PATH}, or SIGUSR1)",
        ]
        if insecure:
            lines.append(
                "--insecure: the upstream's TLS certificate is NOT verified; anyone on the path "
                "can read and change this traffic"
            )
        sys.stdout.write("\n".join(lines) + "\n")
        sys.stdout.flush()

    # The recording process starts first (forked before the event loop exists).
    writer = Writer(Settings(directory, shown, fields, body_limit, version))
    try:
        summary = asyncio.run(Proxy(config, writer, say).run(ready))
    except OSError as exc:
        writer.close()
        # Nothing was recorded: the directory can be used again.
        (directory / EXCHANGES_FILE).unlink(missing_ok=True)
        if exc.errno == errno.EADDRINUSE:
            _fail(
                f"cannot listen on 127.0.0.1:{port}: the port is taken; choose one with "
                "--port, or --port 0 for any free port",
                ExitStatus.ERROR,
            )
        _fail(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}", ExitStatus.ERROR)
        return
    writer.close()
    if "failed" in summary:
        _fail(f"{summary['failed']}; what is in {directory} is all there is", ExitStatus.ERROR)
    line = (
        f"Recorded {summary['exchanges']} exchanges and {summary['webhooks']} webhooks to "
        f"{directory / EXCHANGES_FILE}; scenario of {summary['steps']} steps to "
        f"{directory / SCENARIO_FILE}"
    )
    if summary["notComparable"]:
        line += f" ({summary['notComparable']} exchanges got no answer: left out)"
    if summary["tools"]:
        line += f" ({summary['tools']} calls of payorch's own tools left out of the scenario)"
    say(line + ".")
    if summary["lost"]:
        say(f"payorch proxy: {summary['lost']} records could not be written.")
