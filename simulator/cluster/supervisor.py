"""`payorch serve --workers N`: N worker processes behind Debian's nginx, on one public port.

The supervisor (the `payorch serve` process) starts N full payorch servers on private loopback
ports, each with its own data dir `<data dir>/workers/<i>/` (they share no state and no files),
writes the nginx configuration (simulator/cluster/nginx_config.py) into a private directory and
runs nginx in the foreground on the public port. What the workers must agree on is passed to
them on their command line and environment: the namespaces' key-derivation secret (kept by the
supervisor in `<data dir>/workers/.secret`), the public origin, the siblings' addresses. Each
worker's port is held from the moment it is chosen: the supervisor binds it and the worker's
first start inherits the listening socket. nginx starts first, so that with `--port 0` a public
port taken before nginx binds it is simply chosen again.

A worker that dies (kill -9, a crash) is started again on its port and data dir: meanwhile nginx
answers its namespaces 503 with `Retry-After`, and every write it acknowledged is on disk (the
store appends each one before answering). If nginx dies the server stops. SIGINT/SIGTERM stop
nginx and the workers (each drains its requests in flight, `SHUTDOWN_GRACE_SECONDS`), then the
supervisor exits 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import shutil
import signal
import socket
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from payorch import tempdirs
from simulator.cluster import SECRET_ENV, SOCKET_ENV, WORKER_ENV
from simulator.cluster.nginx_config import Runtime, render
from simulator.store.files import read_or_make_secret

NGINX_ENV = "PAYORCH_NGINX"  # a path to the nginx binary, instead of looking it up
INSTALL_HINT = (
    "nginx is not installed (payorch serve --workers runs it): "
    "apt-get update && apt-get install nginx-light"
)
START_TIMEOUT_SECONDS = 60.0  # a worker's start, under load (typically well under a second)
STOP_TIMEOUT_SECONDS = 8.0  # workers drain within 5 s (serve's grace); the rest is margin
RESTART_BACKOFF_SECONDS = 1.0  # at most one restart a second of a worker that keeps dying
PORT_ATTEMPTS = 5  # --port 0: ports tried for nginx when the one chosen is taken before it binds
ADDRESS_IN_USE = "(98: Address already in use)"  # nginx's error log, when its bind() fails
WORKER_HOST = "127.0.0.1"
RUNTIME_PREFIX = "payorch-nginx-"


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM it when the supervisor dies, even by kill -9, so that
    no worker or nginx outlives it (Linux's PR_SET_PDEATHSIG; elsewhere nothing)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


_PR_SET_PDEATHSIG = 1


class ClusterError(Exception):
    """A start-up failure with a one-line explanation."""


@dataclass
class Worker:
    index: int
    port: int
    # The supervisor's listening socket on `port`, handed to the first start, then closed here:
    # a restart binds the port by number (and is tried again while it cannot).
    socket: socket.socket | None = None
    process: asyncio.subprocess.Process | None = None
    restarts: int = 0
    drain: asyncio.Task[None] | None = field(default=None, repr=False)

    @property
    def address(self) -> str:
        return f"{WORKER_HOST}:{self.port}"


def find_nginx() -> str:
    """The nginx binary: `$PAYORCH_NGINX`, else on PATH (or Debian's /usr/sbin, which a
    non-root PATH often lacks)."""
    given = os.environ.get(NGINX_ENV)
    if given is not None:
        if os.access(given, os.X_OK):
            return given
        raise ClusterError(INSTALL_HINT)
    found = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/sbin")
    if found is None:
        raise ClusterError(INSTALL_HINT)
    return found


def worker_count(value: str) -> int:
    """`--workers`: a positive number, or `auto` (one per core this process may use)."""
    if value == "auto":
        return (
            len(os.sched_getaffinity(0))
            if hasattr(os, "sched_getaffinity")
            else os.cpu_count() or 1
        )
    try:
        count = int(value)
    except ValueError:
        count = 0
    if count < 1:
        raise ClusterError(
            f"--workers takes a number of workers (1 or more) or 'auto'; got {value!r}"
        )
    return count


def listening_sockets(host: str, count: int) -> list[socket.socket]:
    """`count` sockets listening on free ports of `host`, for the workers to inherit: a port
    chosen then closed could be taken (by any connection's ephemeral port) before its worker
    binds it."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sockets.append(socket.create_server((host, 0)))
    except OSError:
        for s in sockets:
            s.close()
        raise
    return sockets


def free_ports(host: str, count: int) -> list[int]:
    """`count` distinct free ports (all held open while choosing, so none repeats)."""
    sockets = listening_sockets(host, count)
    try:
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def namespace_secret(data_dir: Path) -> bytes:
    """The key every worker derives namespace keys with: made once per data dir, kept by the
    supervisor (no worker reads it: it reaches them in their environment)."""
    return read_or_make_secret(data_dir / "workers" / ".secret")


def check_layout(data_dir: Path, count: int) -> None:
    """A data dir is served by the number of workers it was first served by: a namespace's
    worker is its name's hash modulo that number, so another number would look for namespaces
    where they are not."""
    path = data_dir / "workers" / "count"
    try:
        before = int(path.read_text().strip())
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{count}\n")
        return
    except ValueError:
        return  # unreadable: nothing to hold the new start to
    if before != count:
        raise LayoutError(
            f"{data_dir} is served by {before} workers (its namespaces are placed by that "
            f"number): start it with --workers {before}, or use another --data-dir"
        )


class LayoutError(ClusterError):
    """The data dir was made by another number of workers (a usage error: exit 2)."""


class Supervisor:
    def __init__(
        self,
        *,
        host: str,
        port: int,
        data_dir: Path,
        count: int,
        worker_command: Sequence[str],  # the CLI's `payorch serve`: no CLI module is named here
        worker_options: Sequence[str],
        nginx: str,
        forward_output: bool = False,
        listening: Callable[[str], None] | None = None,
        out: TextIO = sys.stdout,
        err: TextIO = sys.stderr,
    ) -> None:
        self.host, self.data_dir, self.count = host, data_dir, count
        self.any_port = not port  # --port 0: another free port is chosen if this one is taken
        self.port = port or free_ports(host, 1)[0]
        self.worker_command, self.worker_options = worker_command, worker_options
        self.nginx_binary = nginx
        self.out, self.err = out, err
        self.forward_output = forward_output  # the workers' --log-requests lines
        self.listening = listening  # what to print under the Listening line (next steps)
        self.workers = [
            Worker(index=i, port=held.getsockname()[1], socket=held)
            for i, held in enumerate(listening_sockets(WORKER_HOST, count))
        ]
        self.env = {**os.environ, SECRET_ENV: namespace_secret(data_dir).hex()}
        # A killed supervisor's directory is removed by the next start (payorch/tempdirs.py).
        self.runtime = Runtime(tempdirs.make(RUNTIME_PREFIX))
        # nginx's worker processes drop root to `nobody`: let them through to their temp dirs.
        os.chmod(self.runtime.directory, 0o711)
        self.nginx: asyncio.subprocess.Process | None = None
        self.stopping = asyncio.Event()

    @property
    def public_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def _argv(self, worker: Worker) -> list[str]:
        origins = [f"http://{w.address}" for w in self.workers if w is not worker]
        return [
            *self.worker_command,
            "--host",
            WORKER_HOST,
            "--port",
            str(worker.port),
            "--data-dir",
            str(self.data_dir / "workers" / str(worker.index)),
            "--public-url",
            self.public_url,
            *[arg for origin in origins for arg in ("--peer", origin)],
            *self.worker_options,
        ]

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.stopping.set)
        try:
            # nginx first: with --port 0 its port may have to be chosen again, and the workers
            # are told the public URL. Nobody has been told the port yet, so nobody meets a
            # worker still starting.
            await self._start_nginx()
            await asyncio.gather(*(self._start(w) for w in self.workers))
            self.out.write(f"Listening on {self.public_url}\n")
            self.out.flush()
            if self.listening is not None:
                self.listening(self.public_url)
                self.out.flush()
            watchers = [asyncio.create_task(self._watch(w)) for w in self.workers]
            nginx_exit = asyncio.create_task(self._nginx_exit())
            stop = asyncio.create_task(self.stopping.wait())
            await asyncio.wait([nginx_exit, stop], return_when=asyncio.FIRST_COMPLETED)
            failed = nginx_exit.done() and not self.stopping.is_set()
            self.stopping.set()
            for task in watchers:
                task.cancel()
            if failed:
                self._say(f"nginx stopped: {self._nginx_log_tail()}")
                return 1
            return 0
        finally:
            await self._stop_all()
            for worker in self.workers:
                self._release(worker)
            shutil.rmtree(self.runtime.directory, ignore_errors=True)

    # -- workers ------------------------------------------------------------------------------

    async def _start(self, worker: Worker) -> None:
        env = {**self.env, WORKER_ENV: f"{worker.index}/{self.count}"}
        inherited: tuple[int, ...] = ()
        if worker.socket is not None:
            inherited = (worker.socket.fileno(),)
            env[SOCKET_ENV] = str(worker.socket.fileno())
        try:
            process = await asyncio.create_subprocess_exec(
                *self._argv(worker),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                env=env,
                start_new_session=True,  # a Ctrl-C reaches the supervisor, which stops them
                preexec_fn=_die_with_parent,
                pass_fds=inherited,
            )
        finally:
            self._release(worker)  # the worker has its own copy, or failed to start
        worker.process = process
        assert process.stdout is not None
        try:
            line = await asyncio.wait_for(process.stdout.readline(), START_TIMEOUT_SECONDS)
        except TimeoutError:
            line = b""
        if not line.startswith(b"Listening on "):
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
            raise ClusterError(
                f"worker {worker.index} did not start (exit status {process.returncode}); "
                "its error is above"
            )
        worker.drain = asyncio.create_task(
            _drain(process.stdout, self.out if self.forward_output else None)
        )

    async def _watch(self, worker: Worker) -> None:
        """Start `worker` again whenever it dies, until the server stops."""
        while True:
            assert worker.process is not None
            status = await worker.process.wait()
            if self.stopping.is_set():
                return
            died_at = time.monotonic()
            self._say(f"worker {worker.index} exited ({_status(status)}); starting it again")
            while not self.stopping.is_set():
                try:
                    await self._start(worker)
                    break
                except ClusterError as exc:
                    self._say(str(exc))
                    await asyncio.sleep(RESTART_BACKOFF_SECONDS)
            worker.restarts += 1
            took = time.monotonic() - died_at
            self._say(f"worker {worker.index} is back ({took:.1f} s after it exited)")

    @staticmethod
    def _release(worker: Worker) -> None:
        if worker.socket is not None:
            worker.socket.close()
            worker.socket = None

    # -- nginx --------------------------------------------------------------------------------

    async def _start_nginx(self) -> None:
        for attempt in range(PORT_ATTEMPTS):
            try:
                await self._launch_nginx()
                return
            except ClusterError:
                if not self._nginx_found_port_taken():
                    raise
                if not self.any_port or attempt == PORT_ATTEMPTS - 1:
                    raise ClusterError(
                        f"nginx did not start: {self.host}:{self.port} is taken (by another "
                        "payorch serve or another program); choose one with --port, or --port 0 "
                        "for any free port"
                    ) from None
                await self._stop_nginx()
                self.port = free_ports(self.host, 1)[0]

    async def _stop_nginx(self) -> None:
        """The failed nginx's whole group, waited for, before another is launched."""
        assert self.nginx is not None
        _signal_group(self.nginx.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            self.nginx.kill()
        await self.nginx.wait()
        self.nginx = None

    async def _launch_nginx(self) -> None:
        self.runtime.error_log.unlink(missing_ok=True)  # this launch's lines only
        listen = (
            f"{self.host}:{self.port}" if ":" not in self.host else f"[{self.host}]:{self.port}"
        )
        text = render([w.address for w in self.workers], listen, runtime=self.runtime)
        self.runtime.config.write_text(text)
        self.nginx = await asyncio.create_subprocess_exec(
            *self.runtime.command(self.nginx_binary),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        # Ready when *our* nginx holds the port: it writes its pid file only once it has bound
        # its sockets, whereas an answer on the port may come from another process (the
        # orphaned workers of a killed nginx answered the probe, then our nginx failed to bind).
        pid_file = self.runtime.directory / "nginx.pid"
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not (_holds(pid_file, self.nginx.pid) and await _accepts(self.host, self.port)):
            if self.nginx.returncode is not None or time.monotonic() > deadline:
                raise ClusterError(f"nginx did not start: {self._nginx_log_tail()}")
            await asyncio.sleep(0.02)

    async def _nginx_exit(self) -> None:
        assert self.nginx is not None
        await self.nginx.wait()

    def _nginx_found_port_taken(self) -> bool:
        try:
            return ADDRESS_IN_USE in self.runtime.error_log.read_text()
        except OSError:
            return False

    def _nginx_log_tail(self) -> str:
        try:
            lines = self.runtime.error_log.read_text().strip().splitlines()
        except OSError:
            lines = []
        return lines[-1] if lines else "no message in its error log"

    # -- stopping -----------------------------------------------------------------------------

    async def _stop_all(self) -> None:
        """nginx stops taking connections and finishes those it has (QUIT) while every worker
        drains (TERM); whatever is still running after the timeout is killed."""
        # nginx's whole process group (its own session: the master and its worker processes),
        # so that its workers go too when the master is already gone (killed: its workers
        # stayed on the port answering 503 for ever).
        if self.nginx is not None:
            _signal_group(self.nginx.pid, signal.SIGQUIT)
        running = [w.process for w in self.workers if w.process and w.process.returncode is None]
        for process in running:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
        processes = [*running, *([self.nginx] if self.nginx else [])]
        waits = [asyncio.create_task(p.wait()) for p in processes]
        if waits:
            await asyncio.wait(waits, timeout=STOP_TIMEOUT_SECONDS)
        for process in processes:
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
        if self.nginx is not None:
            _signal_group(self.nginx.pid, signal.SIGKILL)  # whatever of the group is left
        for worker in self.workers:
            if worker.drain is not None:
                worker.drain.cancel()

    def _say(self, message: str) -> None:
        self.err.write(f"payorch serve: {message}\n")
        self.err.flush()


async def _drain(stream: asyncio.StreamReader, out: TextIO | None) -> None:
    """A worker's standard output after its Listening line, never left to fill its pipe: copied
    line by line to `out` (so that lines of several workers never mix), or dropped."""
    while True:
        try:
            line = await stream.readline()
        except ValueError:  # a line past the reader's limit (it drops it): go on
            continue
        if not line:
            return
        if out is not None:
            out.write(line.decode(errors="replace"))
            out.flush()


def _signal_group(group: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, sig)


def _holds(pid_file: Path, pid: int) -> bool:
    try:
        return pid_file.read_text().strip() == str(pid)
    except OSError:
        return False


async def _accepts(host: str, port: int) -> bool:
    try:
        _, writer = await asyncio.open_connection(host, port)
    except OSError:
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


def _status(code: int) -> str:
    if code < 0:
        return f"signal {signal.Signals(-code).name}"
    return f"status {code}"
