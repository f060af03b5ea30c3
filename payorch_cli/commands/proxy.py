"""`payorch proxy`: a recording proxy in front of a real sandbox (design.md 1.9); the work is in
payorch_cli/proxy/ (server, recorder, redaction, scenario)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import urlsplit

import typer

from payorch_cli.options import ExitStatus, positive_seconds

if TYPE_CHECKING:
    from payorch_cli.proxy.server import Config

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


# The command's options, declared once here so that `proxy` itself stays short.
Upstream = Annotated[
    str,
    typer.Option(
        "--upstream",
        help="The sandbox to forward to (https://sandbox.example, or a payorch serve URL).",
        show_default=False,
    ),
]
Port = Annotated[
    int, typer.Option("--port", min=0, max=65535, help="The proxy's port (0: a free one).")
]
Out = Annotated[
    Path | None,
    typer.Option(
        "--out",
        help="The recording's directory (default: payorch-recording-YYYYMMDD-HHMMSS here).",
        show_default=False,
    ),
]
WebhookSecret = Annotated[
    str | None,
    typer.Option(
        "--webhook-secret",
        help="The signing secret of the subscription you register at the proxy's receiver: "
        "each delivery is recorded as valid or invalid.",
        show_default=False,
    ),
]
ForwardWebhooksTo = Annotated[
    str | None,
    typer.Option(
        "--forward-webhooks-to",
        help="Your own webhook receiver: each delivery is forwarded there unchanged.",
        show_default=False,
    ),
]
Redact = Annotated[
    list[str] | None,
    typer.Option(
        "--redact",
        help="A further JSON key, query parameter or header to redact (repeatable).",
        show_default=False,
    ),
]
Insecure = Annotated[
    bool,
    typer.Option(
        "--insecure",
        help="Do not verify the upstream's TLS certificate (a self-signed sandbox). Anyone "
        "on the path can then read and change the traffic.",
    ),
]
Timeout = Annotated[
    float,
    typer.Option(
        "--timeout",
        parser=positive_seconds,
        help="Seconds to wait for the upstream (to connect, and between reads) before 504.",
    ),
]
BodyLimit = Annotated[
    int,
    typer.Option(
        "--body-limit",
        min=0,
        help="Bytes of each body kept in the recording; past it, recorded cut (truncated).",
    ),
]


def proxy(
    upstream: Upstream,
    port: Port = DEFAULT_PORT,
    out: Out = None,
    webhook_secret: WebhookSecret = None,
    forward_webhooks_to: ForwardWebhooksTo = None,
    redact: Redact = None,
    insecure: Insecure = False,
    timeout: Timeout = 30.0,
    body_limit: BodyLimit = 1024 * 1024,
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
    from payorch_cli.proxy.server import Config  # aiohttp: only once the options are good

    config = Config(
        upstream,
        port,
        directory,
        webhook_secret,
        forward_webhooks_to,
        insecure,
        timeout,
        body_limit,
    )
    _run(config, fields)


def _run(config: Config, fields: tuple[str, ...]) -> None:
    import asyncio
    from importlib import metadata

    from yarl import URL

    from payorch_cli.proxy.server import Proxy
    from payorch_cli.proxy.writer import Settings, Writer

    version = f"payorch {metadata.version('payorch')}"
    # What is printed and recorded names the upstream without any user:password it carries.
    shown = str(URL(config.upstream).with_user(None))
    # The recording process starts first (forked before the event loop exists).
    writer = Writer(Settings(config.out, shown, fields, config.body_limit, version))
    try:
        summary = asyncio.run(Proxy(config, writer, _say).run(_banner(config, shown)))
    except OSError as exc:
        writer.close()
        _listen_failed(config, exc)
        return
    writer.close()
    _summarise(config.out, summary)


def _say(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _banner(config: Config, shown: str) -> Callable[[int], None]:
    """What is printed once the proxy listens (the first line is `Listening on URL`)."""
    from payorch_cli.proxy.server import FLUSH_PATH, WEBHOOK_PATH
    from payorch_cli.recording.format import EXCHANGES_FILE, SCENARIO_FILE

    directory = config.out

    def ready(bound: int) -> None:
        base = f"http://127.0.0.1:{bound}"
        lines = [
            f"Listening on {base}",
            f"Forwarding to {shown}",
            f"Webhook receiver: {base}{WEBHOOK_PATH} (register it upstream)",
            f"Recording to {directory / EXCHANGES_FILE}; the scenario goes to "
            f"{directory / SCENARIO_FILE} on stop or flush (POST {base}{FLUSH_PATH}, or SIGUSR1)",
        ]
        if config.insecure:
            lines.append(
                "--insecure: the upstream's TLS certificate is NOT verified; anyone on the path "
                "can read and change this traffic"
            )
        sys.stdout.write("\n".join(lines) + "\n")
        sys.stdout.flush()

    return ready


def _listen_failed(config: Config, exc: OSError) -> None:
    import errno

    from payorch_cli.recording.format import EXCHANGES_FILE

    # Nothing was recorded: the directory can be used again.
    (config.out / EXCHANGES_FILE).unlink(missing_ok=True)
    where = f"127.0.0.1:{config.port}"
    if exc.errno == errno.EADDRINUSE:
        _fail(
            f"cannot listen on {where}: the port is taken; choose one with "
            "--port, or --port 0 for any free port",
            ExitStatus.ERROR,
        )
    _fail(f"cannot listen on {where}: {exc.strerror or exc}", ExitStatus.ERROR)


def _summarise(directory: Path, summary: dict[str, Any]) -> None:
    from payorch_cli.recording.format import EXCHANGES_FILE, SCENARIO_FILE

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
    _say(line + ".")
    if summary["lost"]:
        _say(f"payorch proxy: {summary['lost']} records could not be written.")
