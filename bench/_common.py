"""What the benchmark scripts that run `payorch serve` as a subprocess share.

Not a test helper and not part of the package: imported by the scripts in this folder (run as
`python bench/NAME.py`, so this folder is on sys.path).
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

SK = "sk_test_19g744zrbw5buqxqpxp5w4gj"  # sandbox secret key of shp_mazul_tienda (fixtures)
LIVE_SK = "sk_live_lvuyxno67qob31r1gq32rfwr"  # production secret key of shp_mazul_tienda
BODY = {"amount": 50, "paymentMethodId": "1001", "userEmail": "bench@example.com"}
AUTH = {"Authorization": f"Bearer {SK}", "Content-Type": "application/json"}
FILL_CONNECTIONS = 4
ENV = dict(os.environ)  # what the started servers get; a script may adjust it first


_BARE_APP = r"""
import asyncio, sys
from aiohttp import web
%s
async def main():
    app = web.Application()
%s
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    print("Listening on http://127.0.0.1:%%d" %% port, flush=True)
    await asyncio.Event().wait()
asyncio.run(main())
"""


def bare_app_cmd(handlers: str, routes: list[tuple[str, str, str]], *args: str) -> list[str]:
    """A bare aiohttp app (the baselines): `handlers` is module source defining the handlers,
    `routes` (method, path, handler name); it prints "Listening on" like `payorch serve`."""
    added = "\n".join(
        f"    app.router.add_route({method!r}, {path!r}, {name})" for method, path, name in routes
    )
    return [sys.executable, "-c", _BARE_APP % (handlers, added), *args]


def serve_cmd(data_dir: Path | str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "payorch_cli.main",
        "serve",
        "--port",
        "0",
        "--no-rate-limit",
        "--data-dir",
        str(data_dir),
    ]


def start(cmd: list[str]) -> tuple[subprocess.Popen[str], int, float]:
    """Start `cmd`; return it, its port and the seconds until it printed "Listening on"."""
    began = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=ENV)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    elapsed = time.perf_counter() - began
    if "Listening on" not in line:
        proc.kill()
        proc.wait()
        raise RuntimeError(f"{cmd[:4]} did not start: {line!r}")
    return proc, int(line.rsplit(":", 1)[1]), elapsed


def stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)  # graceful: the server compacts its store
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def call(
    port: int, method: str, path: str, body: object = None, headers: dict[str, str] | None = None
) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port)
    conn.request(method, path, json.dumps(body) if body is not None else None, headers or AUTH)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data


def stored(port: int) -> int:
    """How many payments the sandbox key's shop has."""
    _, raw = call(port, "GET", "/api/v1/payments?limit=1")
    return int(json.loads(raw)["pagination"]["total"])


def fill(port: int, count: int) -> None:
    """POST `count` payments over FILL_CONNECTIONS keep-alive connections."""
    per = [
        count // FILL_CONNECTIONS + (i < count % FILL_CONNECTIONS) for i in range(FILL_CONNECTIONS)
    ]
    errors: list[str] = []
    payload = json.dumps(BODY)

    def worker(n: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port)
        for _ in range(n):
            conn.request("POST", "/api/v1/payments", payload, AUTH)
            response = conn.getresponse()
            data = response.read()
            if response.status >= 300:
                errors.append(f"{response.status} {data[:200]!r}")
                return
        conn.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in per if n > 0]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise RuntimeError(f"fill failed: {errors[0]}")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_s(pid: int) -> float:
    """User + system CPU seconds the process has used: less sensitive to a busy machine."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def spread(values: list[float]) -> tuple[float, float, float]:
    """(min, median, max)."""
    return min(values), statistics.median(values), max(values)
