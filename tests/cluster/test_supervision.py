"""`payorch serve --workers` as an attacker or a crash leaves it (issue 31 item 8): nginx's
workers go with their master, readiness is our own nginx's, a worker's private port holds only
its own names, and a killed supervisor's private directory is removed by the next start."""

from __future__ import annotations

import asyncio
import errno
import io
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from payorch_cli.commands.serve_workers import WORKER_COMMAND
from simulator.cluster import supervisor as supervision
from simulator.cluster.supervisor import Supervisor, find_nginx
from tests.cluster.cluster import DEFAULT_SK, PAYORCH, Cluster, call, needs_nginx

pytestmark = needs_nginx


@pytest.fixture
def clusters() -> Iterator[list[Cluster]]:
    started: list[Cluster] = []
    yield started
    for cluster in started:
        cluster.kill()


@pytest.fixture
def private_tmp() -> Iterator[dict[str, str]]:
    """A temp dir of the test's own (TMPDIR) for its servers: a cluster started meanwhile by
    another test of the suite would remove a killed supervisor's directory in the shared one.
    Open to nginx's workers, which run as `nobody`."""
    directory = tempfile.mkdtemp(prefix="payorch-test-tmp-")
    os.chmod(directory, 0o711)
    yield {"TMPDIR": directory}
    shutil.rmtree(directory, ignore_errors=True)


def _children(parent: int) -> list[tuple[int, list[bytes]]]:
    """(pid, command line) of `parent`'s child processes."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                # nginx rewrites its own ("nginx: master process /usr/sbin/nginx -p ..."): words.
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").split()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
                found.append((int(entry), argv))
    return found


def _nginx_of(supervisor: int) -> tuple[int, Path]:
    """The supervisor's nginx master and its private directory (`nginx -p DIR`)."""
    for pid, argv in _children(supervisor):
        if argv[0].endswith(b"nginx") or argv[:3] == [b"nginx:", b"master", b"process"]:
            return pid, Path(argv[argv.index(b"-p") + 1].decode())
    raise AssertionError(f"no nginx of supervisor {supervisor}")


def _group(pgid: int) -> list[int]:
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(entry))
    return members


def _gone(check: Callable[[], object], timeout: float = 15) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not check():
            return True
        time.sleep(0.1)
    return False


def _worker_ports(cluster: Cluster) -> dict[int, int]:
    ports = {}
    for index, pid in cluster.worker_pids().items():
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        ports[index] = int(argv[argv.index(b"--port") + 1])
    return ports


def test_killing_nginx_ends_its_workers_too(tmp_path: Path, clusters: list[Cluster]) -> None:
    cluster = Cluster(tmp_path / "data", 2)
    clusters.append(cluster)
    master, _ = _nginx_of(cluster.proc.pid)
    assert len(_group(master)) >= 2  # the master and its worker process(es)
    os.kill(master, signal.SIGKILL)
    assert cluster.proc.wait(timeout=30) == 1
    assert _gone(lambda: _group(master)), _group(master)
    with socket.socket() as probe:  # nobody answers on the public port any more
        assert probe.connect_ex(("127.0.0.1", cluster.port)) != 0


def test_a_port_answered_by_another_process_is_not_readiness(tmp_path: Path) -> None:
    with socket.socket() as squatter:  # e.g. the orphaned workers of a killed nginx
        squatter.bind(("127.0.0.1", 0))
        squatter.listen(64)
        port = squatter.getsockname()[1]
        command = [*PAYORCH, "serve", "--workers", "2", "--port", str(port)]
        command += ["--data-dir", str(tmp_path / "data")]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert "Listening" not in done.stdout, done.stdout
    assert done.returncode == 1 and "nginx did not start" in done.stderr, done.stderr
    assert f"127.0.0.1:{port} is taken" in done.stderr and "--port 0" in done.stderr


def test_a_worker_refuses_names_placed_on_another(tmp_path: Path, clusters: list[Cluster]) -> None:
    cluster = Cluster(tmp_path / "data", 2)
    clusters.append(cluster)
    ports = _worker_ports(cluster)
    names = {cluster.owner(f"placed-{i}"): f"placed-{i}" for i in range(40)}
    for index, port in ports.items():
        private = f"http://127.0.0.1:{port}"
        foreign = names[1 - index]
        refused = call(private, "PUT", f"/_sim/namespaces/{foreign}", DEFAULT_SK)
        assert refused.status == 403, refused.body
        assert refused.json()["error"]["code"] == "forbidden"
        assert call(private, "GET", f"/ns/{foreign}/api/v1/ping").status == 404
        assert call(private, "PUT", f"/_sim/namespaces/{names[index]}", DEFAULT_SK).status == 201
    listed = cluster.call("GET", "/_sim/namespaces", DEFAULT_SK).json()["data"]
    assert sorted(row["name"] for row in listed) == sorted(["default", *names.values()])


def test_a_killed_supervisors_directory_goes_at_the_next_start(
    tmp_path: Path, clusters: list[Cluster], private_tmp: dict[str, str]
) -> None:
    first = Cluster(tmp_path / "one", 1 + 1, env=private_tmp)
    clusters.append(first)
    master, directory = _nginx_of(first.proc.pid)
    os.killpg(first.proc.pid, signal.SIGKILL)  # the supervisor's own group: itself alone
    first.proc.wait(timeout=10)
    assert _gone(lambda: _group(master))  # its nginx ends with it (parent-death signal)
    assert directory.exists()  # nobody was left to remove it
    second = Cluster(tmp_path / "two", 2, env=private_tmp)
    clusters.append(second)
    assert not directory.exists()
    assert _nginx_of(second.proc.pid)[1].exists()


def _supervisor(data_dir: Path, out: io.StringIO, err: io.StringIO) -> Supervisor:
    return Supervisor(
        host="127.0.0.1",
        port=0,
        data_dir=data_dir,
        count=2,
        worker_command=WORKER_COMMAND,
        worker_options=[],
        nginx=find_nginx(),
        out=out,
        err=err,
    )


def test_the_workers_ports_are_held_from_the_moment_they_are_chosen(tmp_path: Path) -> None:
    # A port chosen, closed, then handed to a worker could be taken meanwhile (CI met a
    # connection's ephemeral port on it: "worker 0 did not start").
    supervisor = _supervisor(tmp_path / "data", io.StringIO(), io.StringIO())
    try:
        for worker in supervisor.workers:
            with socket.socket() as thief, pytest.raises(OSError) as refused:
                thief.bind(("127.0.0.1", worker.port))
            assert refused.value.errno == errno.EADDRINUSE
    finally:
        for worker in supervisor.workers:
            assert worker.socket is not None
            worker.socket.close()


def test_with_port_0_a_public_port_taken_before_nginx_binds_is_chosen_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen(8)
        taken = squatter.getsockname()[1]
        chosen = iter([[taken]])
        real = supervision.free_ports
        monkeypatch.setattr(
            supervision, "free_ports", lambda host, count: next(chosen, None) or real(host, count)
        )
        out, err = io.StringIO(), io.StringIO()
        supervisor = _supervisor(tmp_path / "data", out, err)
        assert supervisor.port == taken

        async def serve_then_stop() -> tuple[int, str]:
            running = asyncio.create_task(supervisor.run())
            while "Listening on" not in out.getvalue():
                assert not running.done(), err.getvalue()
                await asyncio.sleep(0.05)
            url = out.getvalue().split()[-1]
            answer = await asyncio.to_thread(call, url, "GET", "/api/v1/ping", DEFAULT_SK)
            supervisor.stopping.set()
            return await running, f"{url} {answer.status}"

        status, seen = asyncio.run(serve_then_stop())
    url, ping = seen.split()
    assert status == 0 and ping == "200", err.getvalue()
    assert url == supervisor.public_url and supervisor.port != taken
