"""`payorch serve`: the API, checkout pages and control plane on one port."""

from __future__ import annotations

import contextlib
import errno
import gc
import shutil
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from payorch_cli.commands.serve_options import (
    AdminTokenFile,
    BodyTimeout,
    CreationsPerMinute,
    EgressAllow,
    EgressDeny,
    Fsync,
    Host,
    InsecureShared,
    Listen,
    LogRequests,
    LoopbackWebhooks,
    MaxNamespaces,
    NamespaceMaxBytes,
    NamespaceMaxObjects,
    NamespaceRps,
    NamespacesPerOwner,
    NoRateLimit,
    Peers,
    Port,
    PrintProxyConfig,
    PublicUrl,
    Quiet,
    RequestLog,
    Team,
    TeamDir,
    WorkerAddresses,
    Workers,
)
from payorch_cli.commands.serve_team import (
    Bounds,
    admin_token,
    refuse_shared,
    team_worker_options,
)
from payorch_cli.options import DEFAULT_DATA, DataDir, Fixtures
from simulator.cluster import SECRET_ENV, SOCKET_ENV, WORKER_ENV
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
    from aiohttp import web

    from simulator.domain.egress import EgressPolicy

# On SIGINT/SIGTERM, requests in flight get this long to finish; past it they are answered 503
# service_unavailable (never dropped mid-write), so the process is gone well within 10 s.
SHUTDOWN_GRACE_SECONDS = 5.0
LOG_REQUESTS_WITHOUT_LOG = (
    "--log-requests prints the request log, which --request-log 0 turns off: drop one of them"
)


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
    team_dir: TeamDir = None,
) -> None:
    """Serve the API, checkout pages and the /_sim control plane.

    On a terminal it prints, under the `Listening on http://H:P` line, a sandbox key, how to
    open the TUI and the request log, and where the docs are; piped or with --quiet, only the
    Listening line. --log-requests adds one line per request (the `payorch logs tail` layout).
    """
    if print_proxy_config:
        return _print_proxy_config(worker_addresses or [], listen)
    if log_requests and request_log == 0:
        _usage(LOG_REQUESTS_WITHOUT_LOG)
    refuse_shared(host, team=team, insecure_shared=insecure_shared)
    common = Common(fixtures, no_rate_limit, fsync, loopback_webhooks, request_log, body_timeout)
    egress = Egress(egress_allow or [], egress_deny or [])
    storage = (namespace_max_objects, namespace_max_bytes)
    bounds = Bounds(
        max_namespaces, creations_per_minute, namespaces_per_owner, namespace_rps, storage
    )
    count = _worker_count(workers)
    output = Output(not quiet and sys.stdout.isatty(), log_requests and count == 1, fixtures)
    with _removed_unless_served(data_dir, output):
        if count > 1:
            options = common.forwarded(log_requests) + egress.options() + bounds.options()
            if team:
                options += team_worker_options(data_dir, admin_token_file)
            return _serve_workers(host, port, data_dir, count, options, output, log_requests)
        token = admin_token(data_dir, admin_token_file) if team else None
        place = Place(host, port, data_dir, tuple(peers or ()), public_url)
        team_settings = {"team": team, "admin_token": token, "team_dir": team_dir}
        _serve_one(place.settings(egress, team_settings, common, bounds), output)


@dataclass(frozen=True, slots=True)
class Place:
    """Where one process serves, and how it stands among the workers of one server, if so."""

    host: str
    port: int
    data_dir: Path
    peers: tuple[str, ...]
    public_url: str | None

    def settings(
        self, egress: Egress, team: dict[str, Any], common: Common, bounds: Bounds
    ) -> Settings:
        return Settings(
            host=self.host,
            port=self.port,
            data_dir=self.data_dir,
            peers=self.peers,
            public_url=self.public_url,
            namespace_secret=_namespace_secret(),
            worker=_worker_place(),
            egress_policy=egress.policy(),
            **team,
            **common.settings(),
            **bounds.settings(),
        )


def _worker_count(workers: str) -> int:
    from payorch_cli.commands.serve_workers import worker_count_of

    return worker_count_of(workers)


def _serve_workers(
    host: str,
    port: int,
    data_dir: Path,
    count: int,
    options: list[str],
    output: Output,
    log_requests: bool,
) -> None:
    from payorch_cli.commands.serve_workers import serve_workers

    listening = lambda url: output.started(None, url)  # noqa: E731
    serve_workers(
        host, port, data_dir, count, options, log_requests=log_requests, listening=listening
    )


@contextlib.contextmanager
def _removed_unless_served(data_dir: Path, output: Output) -> Iterator[None]:
    """A start that fails before its Listening line leaves no data dir behind (issue 36 item
    10): a dir it made is removed; one that was there before is never touched."""
    made = not data_dir.exists()
    try:
        yield
    except BaseException as exc:
        failed = not isinstance(exc, typer.Exit) or exc.exit_code != 0
        if made and failed and not output.served:
            shutil.rmtree(data_dir, ignore_errors=True)
        raise


@dataclass(frozen=True, slots=True)
class Common:
    """The options a worker of `--workers N` is started with as the server was, and that one
    process serves with."""

    fixtures: Path | None
    no_rate_limit: bool
    fsync: bool
    loopback_webhooks: bool
    request_log: int
    body_timeout: float

    def settings(self) -> dict[str, Any]:
        return {
            "fixtures_dir": self.fixtures,
            "rate_limit": not self.no_rate_limit,
            "fsync": self.fsync,
            "webhooks_loopback_only": self.loopback_webhooks,
            "request_log": self.request_log,
            "body_timeout": self.body_timeout,
        }

    def forwarded(self, log_requests: bool) -> list[str]:
        options = ["--request-log", str(self.request_log)]
        if self.fixtures is not None:
            options += ["--fixtures", str(self.fixtures.resolve())]
        flags = {
            "--no-rate-limit": self.no_rate_limit,
            "--fsync": self.fsync,
            "--loopback-webhooks": self.loopback_webhooks,
            "--log-requests": log_requests,
        }
        options += ["--body-timeout", str(self.body_timeout)]
        return options + [flag for flag, on in flags.items() if on]


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


@dataclass(slots=True)
class Output:
    """What `serve` prints after its Listening line."""

    next_steps: bool
    log_requests: bool
    fixtures: Path | None
    served: bool = False  # the Listening line is out: from here the data dir is in use

    def started(self, app: Any, url: str) -> None:
        self.served = True
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
        from simulator.domain.requestlog import Entry, LogRow
        from simulator.http.keys import REQUEST_LOG

        # Every column into a file or a pipe; as many as fit on a terminal.
        width = shutil.get_terminal_size().columns if sys.stdout.isatty() else 200
        layout = Layout.for_width(width)

        def print_row(row: LogRow) -> None:
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
        site = _site(runner, host, port)
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


def _site(runner: web.AppRunner, host: str, port: int) -> web.BaseSite:
    """The socket the supervisor bound for this worker's first start, else `host:port`."""
    import os
    import socket

    from aiohttp import web

    inherited = os.environ.pop(SOCKET_ENV, None)
    if inherited is None:
        return web.TCPSite(runner, host, port)
    try:
        held = socket.socket(fileno=int(inherited))
        listening = held.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
    except (ValueError, OSError):
        listening = 0
    if not listening:
        # Set by `serve --workers` for its workers only: a value from elsewhere is refused
        # rather than served (or guessed at).
        typer.echo(
            f"payorch serve: {SOCKET_ENV}={inherited!r} is not a listening socket of this "
            "process (serve --workers sets it for its workers): unset it",
            err=True,
        )
        raise typer.Exit(2)
    return web.SockSite(runner, held)


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


@dataclass(frozen=True, slots=True)
class Egress:
    """--egress-allow and --egress-deny, as given."""

    allow: list[str]
    deny: list[str]

    def __post_init__(self) -> None:
        self.policy()  # a rule that does not parse is refused before anything starts

    def policy(self) -> EgressPolicy | None:
        """The rules as one policy (None without any), or exit 2 with the first rule that does
        not parse: nothing is served with half the rules."""
        if not self.allow and not self.deny:
            return None
        from simulator.domain.egress import EgressPolicy, EgressRuleError

        try:
            return EgressPolicy.parse(tuple(self.allow), tuple(self.deny))
        except EgressRuleError as exc:
            _usage(str(exc))

    def options(self) -> list[str]:
        return [f"--egress-allow={rule}" for rule in self.allow] + [
            f"--egress-deny={rule}" for rule in self.deny
        ]
