"""`payorch serve --workers N`: POST /payments spread over 64 namespaces, N workers behind nginx.

In one run, against fresh data dirs: one worker served directly (the baseline), the same worker
behind nginx (the proxy hop's cost), then 2.. up to --max-workers workers behind nginx (default:
the cores this process may use). The fleets are built from the pieces `payorch serve --workers`
uses (simulator/cluster/: the same nginx configuration, secret and worker command line), with
the worker ports known so that the direct baseline hits the very worker the proxy fronts.

Each worker, nginx and wrk run in a session of their own, as `payorch serve --workers` starts its
workers and nginx: Linux's scheduler (autogroup) shares the cores between sessions first, so on a
shared machine processes of one session would share one session's part.

The load is wrk (Debian's, installed if missing) with a Lua script that gives each request the
next of 64 namespaces' secret keys (each namespace's request formatted once), at --connections
connections, a warm-up and --rounds rounds of --seconds. It shares the machine's cores with what
it measures, so every round also reports the CPU each party took (from /proc): workers, nginx,
wrk, and everything else on the machine (other people's load). Figures: median requests/s, the
ratios the issue asks for, a scaling table, and a 16-core projection from the per-worker figure.

    python bench/workers.py [--seconds 5] [--rounds 3] [--connections 64] [--max-workers N]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from _common import BODY, SK, cpu_s, spread

from simulator.cluster import SECRET_ENV
from simulator.cluster.nginx_config import Runtime, render
from simulator.cluster.supervisor import find_nginx, free_ports

NAMESPACES = 64
SHOP = "shp_mazul_tienda"
LUA = """
local keys = {%s}
local i = 0
local body = '%s'
-- Every namespace's request is formatted once per thread: the load generator's CPU per request
-- is the cores it takes from the workers it measures.
local requests = {}
init = function(args)
  for k = 1, #keys do
    local headers = {}
    headers["Content-Type"] = "application/json"
    headers["Authorization"] = "Bearer " .. keys[k]
    requests[k] = wrk.format("POST", "/api/v1/payments", headers, body)
  end
end
request = function()
  i = i + 1
  return requests[(i %% #requests) + 1]
end
"""


@dataclass
class Fleet:
    """N workers, and nginx in front of them (the layout of `payorch serve --workers N`)."""

    root: Path
    count: int
    workers: list[subprocess.Popen[str]] = field(default_factory=list)
    ports: list[int] = field(default_factory=list)
    nginx: subprocess.Popen[str] | None = None
    port: int = 0

    def start(self) -> None:
        self.ports = free_ports("127.0.0.1", self.count)
        self.port = free_ports("127.0.0.1", 1)[0]
        origins = [f"http://127.0.0.1:{p}" for p in self.ports]
        env = {**os.environ, SECRET_ENV: secrets.token_hex(32)}
        for i, port in enumerate(self.ports):
            cmd = [
                sys.executable, "-m", "payorch_cli.main", "serve", "--no-rate-limit",
                "--host", "127.0.0.1", "--port", str(port),
                "--data-dir", str(self.root / "workers" / str(i)),
                "--public-url", f"http://127.0.0.1:{self.port}",
                *[a for o in origins if o != origins[i] for a in ("--peer", o)],
            ]  # fmt: skip
            proc = subprocess.Popen(
                cmd, stdout=subprocess.PIPE, text=True, env=env, start_new_session=True
            )
            assert proc.stdout is not None
            if "Listening on" not in proc.stdout.readline():
                raise RuntimeError(f"worker {i} did not start")
            self.workers.append(proc)
        runtime = Runtime(self.root / "nginx")
        runtime.directory.mkdir(parents=True)
        runtime.directory.chmod(0o711)
        runtime.config.write_text(
            render([f"127.0.0.1:{p}" for p in self.ports], f"127.0.0.1:{self.port}",
                   runtime=runtime)
        )  # fmt: skip
        self.nginx = subprocess.Popen(
            runtime.command(find_nginx()),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True,
            start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while not _accepts(self.port):
            if time.monotonic() > deadline or self.nginx.poll() is not None:
                raise RuntimeError(runtime.error_log.read_text())
            time.sleep(0.02)

    def keys(self) -> list[str]:
        """Create the namespaces through the proxy; one sandbox secret key of each."""
        keys = []
        for n in range(NAMESPACES):
            status, body = _call(self.port, "PUT", f"/_sim/namespaces/bench-{n}", SK)
            assert status == 201, body
            keys.append(
                next(
                    k["secretKey"]
                    for k in json.loads(body)["keys"]
                    if k["shopId"] == SHOP and k["environment"] == "sandbox"
                )
            )
        return keys

    def pids(self) -> dict[str, list[int]]:
        assert self.nginx is not None
        nginx = [self.nginx.pid, *_children(self.nginx.pid)]
        return {"workers": [w.pid for w in self.workers], "nginx": nginx}

    def stop(self) -> None:
        for proc in [*([self.nginx] if self.nginx else []), *self.workers]:
            proc.send_signal(signal.SIGTERM)
        for proc in [*([self.nginx] if self.nginx else []), *self.workers]:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _accepts(port: int) -> bool:
    import socket

    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def _call(port: int, method: str, path: str, key: str) -> tuple[int, bytes]:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request(method, path, headers={"Authorization": f"Bearer {key}"})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def _busy_seconds() -> float:
    """CPU seconds the whole machine has been busy (every core, every process)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


@dataclass
class Round:
    rps: float
    seconds: float
    cpu: dict[str, float]  # party -> CPU seconds during the round


def wrk_round(binary: str, port: int, script: Path, seconds: int, connections: int,
              pids: dict[str, list[int]]) -> Round:  # fmt: skip
    before = {party: sum(cpu_s(p) for p in ps) for party, ps in pids.items()}
    busy, children = _busy_seconds(), resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.monotonic()
    out = subprocess.run(
        [binary, "-t2", f"-c{connections}", f"-d{seconds}s", "-s", str(script),
         f"http://127.0.0.1:{port}"],
        capture_output=True, text=True, check=True, start_new_session=True,
    ).stdout  # fmt: skip
    elapsed = time.monotonic() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = {party: sum(cpu_s(p) for p in ps) - before[party] for party, ps in pids.items()}
    cpu["wrk"] = (after.ru_utime - children.ru_utime) + (after.ru_stime - children.ru_stime)
    cpu["others"] = max(0.0, _busy_seconds() - busy - sum(cpu.values()))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if non2xx is not None:
        raise RuntimeError(out)
    found = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if found is None:
        raise RuntimeError(out)
    rps = float(found.group(1))
    return Round(rps, elapsed, cpu)


@dataclass(frozen=True)
class Summary:
    median: float  # requests/s
    cores: dict[str, float]  # party -> cores used
    ms_per_request: dict[str, float]  # party -> CPU ms per request


@dataclass
class Target:
    label: str
    port: int
    script: Path
    pids: dict[str, list[int]]
    rounds: list[Round] = field(default_factory=list)

    def summary(self) -> Summary:
        rps = [r.rps for r in self.rounds]
        low, median, high = spread(rps)
        total = sum(r.rps * r.seconds for r in self.rounds)
        wall = sum(r.seconds for r in self.rounds)
        parties = ("workers", "nginx", "wrk", "others")
        cpu = {p: sum(r.cpu.get(p, 0.0) for r in self.rounds) for p in parties}
        per_request_ms = {p: 1000 * cpu[p] / total for p in ("workers", "nginx", "wrk")}
        cores = {p: cpu[p] / wall for p in cpu}
        print(
            f"{self.label:<28} {median:8.0f} req/s ({low:.0f}-{high:.0f})  cores used: "
            + ", ".join(f"{p} {cores[p]:.2f}" for p in cores)
            + "  CPU ms/request: "
            + ", ".join(f"{p} {per_request_ms[p]:.3f}" for p in per_request_ms),
            flush=True,
        )
        return Summary(median, cores, per_request_ms)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=64)
    cores = len(os.sched_getaffinity(0))
    parser.add_argument("--max-workers", type=int, default=cores)
    args = parser.parse_args()
    binary = shutil.which("wrk")
    if binary is None:
        subprocess.run(["apt-get", "install", "-y", "-q", "wrk"], check=True, capture_output=True)
        binary = shutil.which("wrk") or "wrk"
    print(f"{cores} cores; load average before: {os.getloadavg()}", flush=True)
    results: dict[str, Summary] = {}
    fleets: list[Fleet] = []
    targets: dict[str, Target] = {}
    # Every fleet runs from the start (idle ones cost nothing) and the rounds alternate between
    # them, so that a change in the machine's other load falls on every configuration alike.
    with tempfile.TemporaryDirectory(prefix="bench-workers-") as tmp:
        try:
            for count in range(1, args.max_workers + 1):
                fleet = Fleet(Path(tmp) / str(count), count)
                fleets.append(fleet)
                fleet.start()
                keys = fleet.keys()
                script = Path(tmp) / f"post-{count}.lua"
                script.write_text(LUA % (", ".join(f'"{k}"' for k in keys), json.dumps(BODY)))
                pids = fleet.pids()
                if count == 1:
                    direct = {"workers": pids["workers"], "nginx": []}
                    targets["direct"] = Target("1 worker, direct", fleet.ports[0], script, direct)
                targets[str(count)] = Target(
                    f"{count} worker(s) behind nginx", fleet.port, script, pids
                )
            for target in targets.values():  # warm-up
                wrk_round(binary, target.port, target.script, 2, args.connections, target.pids)
            for _ in range(args.rounds):
                for target in targets.values():
                    target.rounds.append(
                        wrk_round(binary, target.port, target.script, args.seconds,
                                  args.connections, target.pids)
                    )  # fmt: skip
        finally:
            for fleet in fleets:
                fleet.stop()
    for key, target in targets.items():
        results[key] = target.summary()
    print(f"load average after: {os.getloadavg()}")
    one = results["1"].median
    direct_rps = results["direct"].median
    print(
        f"\n1 worker behind nginx / the same worker direct: {one / direct_rps:.2f}x (goal >= 0.85)"
    )
    print("\nworkers  req/s   vs 1 worker  per worker")
    for count in range(1, args.max_workers + 1):
        rps = results[str(count)].median
        print(f"{count:7d}  {rps:6.0f}  {rps / one:10.2f}x  {rps / count:9.0f}")
    if args.max_workers >= 2:
        two = results["2"].median
        print(f"\n2 workers / 1 worker behind the same proxy: {two / one:.2f}x (goal >= 1.6)")
    # What the CPU each party took per request says the throughput would be if nothing else ran
    # (the load generator still on the same cores): one worker is bound by its own core, N
    # workers by the cores shared among workers, nginx and wrk.
    print("\nfrom CPU per request, on an otherwise idle machine (wrk included):")
    capacity: dict[int, float] = {}
    for count in range(1, args.max_workers + 1):
        ms = results[str(count)].ms_per_request
        shared = cores * 1000 / (ms["workers"] + ms["nginx"] + ms["wrk"])
        capacity[count] = min(count * 1000 / ms["workers"], shared)
        print(f"{count:7d}  {capacity[count]:6.0f} req/s  {capacity[count] / capacity[1]:.2f}x")
    top = str(args.max_workers)
    per_worker = results[top].median / args.max_workers
    cost = results[top].ms_per_request
    server_ms = cost["workers"] + cost["nginx"]
    print(
        f"\nprojected 16 cores: {16 * per_worker:.0f} req/s from the per-worker figure "
        f"({per_worker:.0f} req/s x 16, load generator sharing the cores as here); "
        f"{16 * 1000 / server_ms:.0f} req/s if 16 cores ran only workers and nginx at the CPU "
        f"each request cost them here ({cost['workers']:.3f} + {cost['nginx']:.3f} ms)"
    )


if __name__ == "__main__":
    main()
