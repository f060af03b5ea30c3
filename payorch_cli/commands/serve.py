"""`payorch serve`: the API, checkout pages and control plane on one port."""

from __future__ import annotations

import errno
import gc
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from payorch_cli.commands.serve_team import Bounds, admin_token, rate, refuse_shared
from payorch_cli.options import DEFAULT_DATA, DataDir, Fixtures
from simulator.cluster import SECRET_ENV, WORKER_ENV
from simulator.settings import (
    BODY_TIMEOUT_SECONDS,
    DEFAULT_HOST,
    DEFAULT_PORT,
    MAX_NAMESPACES,
    NAMESPACE_CREATIONS_PER_MINUTE,
    NAMESPACES_PER_OWNER,
    REQUEST_LOG_SIZE,
    Settings,
)

if TYPE_CHECKING:
    from simulator.domain.egress import EgressPolicy

# On SIGINT/SIGTERM, requests in flight get this long to finish; past it they are answered 503
# service_unavailable (never dropped mid-write), so the process is gone well within 10 s.
SHUTDOWN_GRACE_SECONDS = 5.0
LOG_REQUESTS_WITHOUT_LOG = (
    "--log-requests prints the request log, which --request-log 0 turns off: drop one of them"
)


# serve's options, one alias each, so that its signature reads as the list of what it takes.
Host = Annotated[str, typer.Option("--host", help="Interface to bind.")]
Port = Annotated[int, typer.Option("--port", min=0, max=65535, help="Port; 0 takes a free one.")]
NoRateLimit = Annotated[
    bool, typer.Option("--no-rate-limit", help="Turn the per-credential rate limit off.")
]
Fsync = Annotated[
    bool, typer.Option("--fsync", help="fsync every write (survives power loss, slower).")
]
LoopbackWebhooks = Annotated[
    bool,
    typer.Option(
        "--loopback-webhooks",
        help="Deliver webhooks to loopback hosts only; others are recorded as failed, never "
        "sent (for fuzzing with generated URLs).",
    ),
]
RequestLog = Annotated[
    int,
    typer.Option(
        "--request-log",
        min=0,
        metavar="N",
        help="Keep the last N requests in the request log (GET /_sim/requests, payorch logs "
        "tail); 0 turns it off.",
    ),
]
Workers = Annotated[
    str,
    typer.Option(
        "--workers",
        metavar="N|auto",
        help="Serve through nginx in front of N worker processes (auto: one per core); "
        "each namespace lives in one of them. 1: one process, no proxy.",
    ),
]
PrintProxyConfig = Annotated[
    bool,
    typer.Option(
        "--print-proxy-config",
        help="Moved to `payorch deploy-config` (still works here).",
        hidden=True,
    ),
]
WorkerAddresses = Annotated[
    list[str] | None,
    typer.Option(
        "--worker",
        metavar="HOST:PORT",
        help="A worker's address (--print-proxy-config).",
        hidden=True,
    ),
]
Listen = Annotated[
    str,
    typer.Option(
        "--listen",
        metavar="[ADDRESS:]PORT",
        help="The proxy's port (--print-proxy-config).",
        hidden=True,
    ),
]
Peers = Annotated[
    list[str] | None,
    typer.Option(
        "--peer",
        metavar="URL",
        help="A sibling worker's origin, when this server is one worker of several "
        "(docs/deploy.md).",
    ),
]
PublicUrl = Annotated[
    str | None,
    typer.Option(
        "--public-url",
        metavar="URL",
        help="The origin clients reach this server by (a proxy's), for URLs it hands out.",
    ),
]
LogRequests = Annotated[
    bool,
    typer.Option(
        "--log-requests",
        help="Print one line per request on standard output, after the Listening line "
        "(not those of payorch's own tools, such as the TUI's polling).",
    ),
]
Quiet = Annotated[
    bool,
    typer.Option(
        "--quiet",
        "-q",
        help="Print only the Listening line (the next steps it prints on a terminal go).",
    ),
]
BodyTimeout = Annotated[
    float,
    typer.Option(
        "--body-timeout",
        min=0,
        metavar="SECONDS",
        help="Seconds a request body has to arrive whole once its head is in; a slower one "
        "is answered 408 request_timeout and its connection closed. 0: no limit.",
    ),
]
EgressAllow = Annotated[
    list[str] | None,
    typer.Option(
        "--egress-allow",
        metavar="CIDR|HOST",
        help="Let webhook deliveries reach this range, address or host (*.domain for "
        "every name under it) that the egress policy refuses; repeatable. Any egress rule "
        "turns the policy on, as team mode does (docs/deploy.md).",
    ),
]
EgressDeny = Annotated[
    list[str] | None,
    typer.Option(
        "--egress-deny",
        metavar="CIDR|HOST",
        help="Refuse webhook deliveries to this range, address or host; repeatable. The "
        "most specific rule decides.",
    ),
]
Team = Annotated[
    bool,
    typer.Option(
        "--team",
        help="A team server: owner and admin tokens, quotas, audit trail (README, "
        '"A team server").',
    ),
]
AdminTokenFile = Annotated[
    Path | None,
    typer.Option(
        "--admin-token-file",
        metavar="FILE",
        help="--team: the admin token (pat_...); without it one is made in the data dir "
        "(team/admin-token, mode 0600) on first start and printed once.",
    ),
]
InsecureShared = Annotated[
    bool,
    typer.Option(
        "--insecure-shared",
        help="Serve local mode on a non-loopback --host anyway: anyone who reaches it "
        "manages every namespace with the public fixture keys.",
    ),
]
MaxNamespaces = Annotated[
    int,
    typer.Option(
        "--max-namespaces", min=0, metavar="N", help="Namespaces the server holds at most."
    ),
]
CreationsPerMinute = Annotated[
    int,
    typer.Option(
        "--namespace-creations-per-minute",
        min=0,
        metavar="N",
        help="Namespaces created per minute at most (429 namespace_rate_limited past it).",
    ),
]
NamespacesPerOwner = Annotated[
    int,
    typer.Option(
        "--namespaces-per-owner",
        min=0,
        metavar="N",
        help="--team: an owner's namespaces at most, unless its own quota says otherwise.",
    ),
]
NamespaceRps = Annotated[
    str,
    typer.Option(
        "--namespace-rps",
        metavar="N|sandbox",
        help="Requests per second per namespace (bursts of 5 s' worth; 429 rate_limited "
        "past it); sandbox: the preset (the starter tier's 200/s, bursts of 1,000); 0: off.",
    ),
]
NamespaceMaxObjects = Annotated[
    int,
    typer.Option(
        "--namespace-max-objects",
        min=0,
        metavar="N",
        help="Objects a namespace may hold (403 for writes past it); 0: no limit.",
    ),
]
NamespaceMaxBytes = Annotated[
    int,
    typer.Option(
        "--namespace-max-bytes",
        min=0,
        metavar="BYTES",
        help="Bytes on disk a namespace may hold (403 for writes past it); 0: no limit.",
    ),
]


def serve(
    host: Host = DEFAULT_HOST,
    port: Port = DEFAULT_PORT,
    data_dir: DataDir = DEFAULT_DATA,
    fixtures: Fixtures = None,
    no_rate_limit: NoRateLimit = False,
    fsync: Fsync = False,
    loopback_webhooks: LoopbackWebhooks = False,
    request_log: RequestLog = REQUEST_LOG_SIZE,
    workers: Workers = "1",
    print_proxy_config: PrintProxyConfig = False,
    worker_addresses: WorkerAddresses = None,
    listen: Listen = str(DEFAULT_PORT),
    peers: Peers = None,
    public_url: PublicUrl = None,
    log_requests: LogRequests = False,
    quiet: Quiet = False,
    body_timeout: BodyTimeout = BODY_TIMEOUT_SECONDS,
    egress_allow: EgressAllow = None,
    egress_deny: EgressDeny = None,
    team: Team = False,
    admin_token_file: AdminTokenFile = None,
    insecure_shared: InsecureShared = False,
    max_namespaces: MaxNamespaces = MAX_NAMESPACES,
    creations_per_minute: CreationsPerMinute = NAMESPACE_CREATIONS_PER_MINUTE,
    namespaces_per_owner: NamespacesPerOwner = NAMESPACES_PER_OWNER,
    namespace_rps: NamespaceRps = "0",
    namespace_max_objects: NamespaceMaxObjects = 0,
    namespace_max_bytes: NamespaceMaxBytes = 0,
) -> None:
    """Serve the API, checkout pages and the /_sim control plane.

    On a terminal it prints, under the `Listening on http://H:P` line, a sandbox key, how to
    open the TUI and the request log, and where the docs are; piped or with --quiet, only the
    Listening line. --log-requests adds one line per request (the `payorch logs tail` layout).
    """
    from payorch_cli.commands.serve_workers import serve_workers, worker_count_of

    if print_proxy_config:
        _print_proxy_config(worker_addresses or [], listen)
        return
    if log_requests and request_log == 0:
        _usage(LOG_REQUESTS_WITHOUT_LOG)
    refuse_shared(host, team=team, insecure_shared=insecure_shared)
    egress = _egress_policy(egress_allow or [], egress_deny or [])
    count = worker_count_of(workers)
    if team and count > 1:
        _usage(
            "--team runs as one process for now (its owners, tokens and audit trail are not "
            "shared between workers): drop --workers"
        )
    next_steps = not quiet and sys.stdout.isatty()
    if count > 1:
        flags = {"--no-rate-limit": no_rate_limit, "--fsync": fsync}
        flags["--loopback-webhooks"] = loopback_webhooks
        options = _forwarded(fixtures, request_log, flags, body_timeout, log_requests)
        options += [f"--egress-allow={rule}" for rule in egress_allow or []]
        options += [f"--egress-deny={rule}" for rule in egress_deny or []]
        steps = Output(next_steps=next_steps, log_requests=False, fixtures=fixtures)
        listening = lambda url: steps.started(None, url)  # noqa: E731
        serve_workers(
            host, port, data_dir, count, options, log_requests=log_requests, listening=listening
        )
        return
    settings = Settings(
        host=host,
        port=port,
        data_dir=data_dir,
        fixtures_dir=fixtures,
        rate_limit=not no_rate_limit,
        fsync=fsync,
        webhooks_loopback_only=loopback_webhooks,
        request_log=request_log,
        peers=tuple(peers or ()),
        public_url=public_url,
        namespace_secret=_namespace_secret(),
        worker=_worker_place(),
        body_timeout=body_timeout,
        egress_policy=egress,
        team=team,
        admin_token=admin_token(data_dir, admin_token_file) if team else None,
        **Bounds(
            max_namespaces,
            creations_per_minute,
            namespaces_per_owner,
            rate(namespace_rps),
            (namespace_max_objects, namespace_max_bytes),
        ).settings(),
    )
    _serve_one(settings, Output(next_steps, log_requests=log_requests, fixtures=fixtures))


def _print_proxy_config(workers: list[str], listen: str) -> None:
    """The old spelling of `payorch deploy-config`: it still prints, and says where it went."""
    from payorch_cli.commands.deploy_config import print_config

    typer.echo("payorch serve: --print-proxy-config is now `payorch deploy-config`", err=True)
    print_config(workers, listen)


def _usage(message: str) -> NoReturn:
    typer.echo(f"payorch serve: {message}", err=True)
    raise typer.Exit(2)


def _serve_one(settings: Settings, output: Output) -> None:
    """One process serving on `settings`' port until SIGINT/SIGTERM; a failure to start is one
    line on stderr and exit 1."""
    import asyncio  # here, not at the top: 30 ms of every other command's start

    from simulator.fixture_loader import FixtureError
    from simulator.store import StoreLockedError

    try:
        asyncio.run(_serve(settings, output))
    except StoreLockedError as exc:
        typer.echo(f"payorch serve: {exc}", err=True)
        raise typer.Exit(1) from None
    except FixtureError as exc:
        typer.echo(f"payorch serve: bad fixtures: {exc}", err=True)
        raise typer.Exit(1) from None
    except OSError as exc:
        typer.echo(f"payorch serve: {os_problem(settings.host, settings.port, exc)}", err=True)
        raise typer.Exit(1) from None


def os_problem(host: str, port: int, exc: OSError) -> str:
    """Why serving failed, with the way out: a taken port suggests `--port 0`."""
    if exc.filename:
        return f"cannot use {exc.filename}: {exc.strerror or exc}"
    if exc.errno == errno.EADDRINUSE:
        return (
            f"cannot listen on {host}:{port}: the port is taken (by another payorch serve or "
            "another program); choose one with --port, or --port 0 for any free port (the "
            "Listening line gives it)"
        )
    return f"cannot listen on {host}:{port}: {exc.strerror or exc}"


@dataclass(frozen=True, slots=True)
class Output:
    """What `serve` prints after its Listening line."""

    next_steps: bool
    log_requests: bool
    fixtures: Path | None

    def started(self, app: Any, url: str) -> None:
        if self.next_steps:
            from payorch_cli.credentials import fixture_rows
            from payorch_cli.render.next_steps import next_steps

            fixtures = str(self.fixtures) if self.fixtures else None
            sys.stdout.write(next_steps(url, fixture_rows(self.fixtures), fixtures) + "\n")
        if self.log_requests:
            self._print_each_request(app)

    @staticmethod
    def _print_each_request(app: Any) -> None:
        import shutil

        from payorch_cli.render.requests import Layout
        from simulator.domain.requestlog import Entry, Row
        from simulator.http.keys import REQUEST_LOG

        # Every column into a file or a pipe; as many as fit on a terminal.
        width = shutil.get_terminal_size().columns if sys.stdout.isatty() else 200
        layout = Layout.for_width(width)

        def print_row(row: Row) -> None:
            # Synchronous, on the request path: opt-in, and a line is a few microseconds.
            summary = dict(Entry(row).summary())
            if summary.get("tool") is not None:
                return  # payorch's own tools (the TUI's polling...), as `logs tail` leaves them
            sys.stdout.write(layout.line(summary) + "\n")
            sys.stdout.flush()

        app[REQUEST_LOG].subscribe(print_row)


async def _serve(settings: Settings, output: Output) -> None:
    import asyncio
    from dataclasses import replace

    from aiohttp import web

    from simulator.app import create_app
    from simulator.http.openfiles import AcceptLog, budget, open_now, raise_soft_limit
    from simulator.http.shutdown import drain
    from simulator.settings import NAMESPACES_IN_MEMORY

    # The open files this process may have, raised to the hard limit, then shared between the
    # namespaces' worlds and the connections, so neither ever meets EMFILE (issue 31).
    files = budget(raise_soft_limit(), open_now(), NAMESPACES_IN_MEMORY)
    asyncio.get_running_loop().set_exception_handler(AcceptLog())
    settings = replace(
        settings, namespaces_in_memory=files.worlds, max_connections=files.connections
    )
    host, port, public_url = settings.host, settings.port, settings.public_url
    app = create_app(settings)
    # drain() has already finished or answered every request when cleanup() runs: the short
    # timeout only bounds closing the connections, before the store is compacted and closed.
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        addresses = runner.addresses  # the bound sockets' addresses (port 0: the port chosen)
        real_port = addresses[0][1] if addresses else port
        from simulator.http.keys import CONTEXT

        app[CONTEXT].public_url = public_url or f"http://{host}:{real_port}"
        # What start-up built (modules, fixtures, compiled schemas, indexes) lives as long as
        # the server: out of the collector's sight, full collections stop re-walking it.
        gc.freeze()
        # Before the first line: a tool may signal the server as soon as it has read it.
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        # The first line, exactly so: tools wait for it and read the port from it.
        sys.stdout.write(f"Listening on http://{host}:{real_port}\n")
        sys.stdout.flush()
        output.started(app, f"http://{host}:{real_port}")
        sys.stdout.flush()
        await stop.wait()
        # Graceful: stop listening (new connections are refused), then let the requests in
        # flight finish within the grace; those that cannot are answered 503, never dropped.
        await site.stop()
        await drain(app, SHUTDOWN_GRACE_SECONDS)
    finally:
        await runner.cleanup()


def _forwarded(
    fixtures: Path | None, log: int, flags: dict[str, bool], body_timeout: float, log_requests: bool
) -> list[str]:
    """The options every worker of `--workers N` is started with (the same as the server's)."""
    options = ["--request-log", str(log)]
    if fixtures is not None:
        options += ["--fixtures", str(fixtures.resolve())]
    options += [flag for flag, on in flags.items() if on]
    options += ["--body-timeout", str(body_timeout)]
    return options + (["--log-requests"] if log_requests else [])


def _namespace_secret() -> bytes | None:
    """The workers' shared key (from the supervisor or a deployment); None: the data dir's."""
    import os

    given = os.environ.get(SECRET_ENV)
    if not given:
        return None
    try:
        return bytes.fromhex(given)
    except ValueError:
        typer.echo(f"payorch serve: {SECRET_ENV} is not hexadecimal", err=True)
        raise typer.Exit(2) from None


def _worker_place() -> tuple[int, int] | None:
    """This worker's `INDEX/COUNT` among its siblings (from the supervisor); None: alone."""
    import os

    given = os.environ.get(WORKER_ENV)
    if not given:
        return None
    index, _, count = given.partition("/")
    if not (index.isdigit() and count.isdigit() and int(index) < int(count)):
        _usage(f"{WORKER_ENV} is not INDEX/COUNT: {given!r}")
    return int(index), int(count)


def _egress_policy(allow: list[str], deny: list[str]) -> EgressPolicy | None:
    """The egress rules as one policy (None without any), or exit 2 with the first rule that
    does not parse: nothing is served with half the rules."""
    if not allow and not deny:
        return None
    from simulator.domain.egress import EgressPolicy, EgressRuleError

    try:
        return EgressPolicy.parse(tuple(allow), tuple(deny))
    except EgressRuleError as exc:
        _usage(str(exc))
