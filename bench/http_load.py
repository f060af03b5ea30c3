"""Throughput and latency of the hot endpoints at 32 connections, against a bare aiohttp baseline.

Starts, in this run: `payorch serve` (fresh data dir, --no-rate-limit) and a bare aiohttp app that
parses the same body and encodes a same-sized JSON document per request, both with orjson (the
faster of the two bare endpoints the issue quotes: 7,000 req/s with stdlib json, 10,000 with
orjson). Drives both with wrk (Debian's `wrk`, installed if missing) at 32 connections, warm-up
plus ROUNDS rounds, and prints min/median/max requests/s, p99 latency and the ratio to the
baseline. Then fills the store to --stored
transactions and measures again, with the server's RSS and its start-up time on that store.

    python bench/http_load.py [--stored 50000] [--seconds 5] [--rounds 3]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SK = "sk_test_19g744zrbw5buqxqpxp5w4gj"
BODY = {"amount": 50, "paymentMethodId": "1001", "userEmail": "bench@example.com"}
AUTH = {"Authorization": f"Bearer {SK}", "Content-Type": "application/json"}

BASELINE = r"""
import asyncio, sys
import orjson
from aiohttp import web
# The documents payorch answered, decoded: the baseline encodes a same-sized one per request.
DOCS = dict(zip(("POST", "GET", "LIST"), map(orjson.loads, sys.argv[1:4])))
def answer(doc):
    return web.Response(body=orjson.dumps(doc), content_type="application/json")
async def post(request):
    await request.json(loads=orjson.loads)
    return answer(DOCS["POST"])
async def get(request):
    return answer(DOCS["GET"])
async def listing(request):
    return answer(DOCS["LIST"])
async def main():
    app = web.Application()
    app.router.add_post("/api/v1/payments", post)
    app.router.add_get("/api/v1/payments/{id}", get)
    app.router.add_get("/api/v1/payments", listing)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print("Listening on http://127.0.0.1:%d" % site._server.sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()
asyncio.run(main())
"""

POST_LUA = """
wrk.method = "POST"
wrk.body = '%s'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer %s"
"""
GET_LUA = 'wrk.headers["Authorization"] = "Bearer %s"\n'


def ensure_wrk() -> str:
    found = shutil.which("wrk")
    if found:
        return found
    subprocess.run(["apt-get", "install", "-y", "-q", "wrk"], check=True, capture_output=True)
    return shutil.which("wrk") or "wrk"


def start(cmd: list[str]) -> tuple[subprocess.Popen[str], int, float]:
    began = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    return proc, int(line.rsplit(":", 1)[1]), time.perf_counter() - began


def call(port: int, method: str, path: str, body: object = None, headers: dict | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", port)
    conn.request(method, path, json.dumps(body) if body is not None else None, headers or AUTH)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data


def wrk(binary: str, url: str, script: str, seconds: int) -> tuple[float, float]:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as handle:
        handle.write(script)
    out = subprocess.run(
        [binary, "-t2", "-c32", f"-d{seconds}s", "--latency", "-s", handle.name, url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    os.unlink(handle.name)
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[p99.group(2)]
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    assert non2xx is None, out
    return rps, float(p99.group(1)) * scale


def measure(binary: str, url: str, script: str, seconds: int, rounds: int) -> dict[str, float]:
    wrk(binary, url, script, 2)  # warm-up
    results = [wrk(binary, url, script, seconds) for _ in range(rounds)]
    rps = [r for r, _ in results]
    return {
        "min": min(rps),
        "median": statistics.median(rps),
        "max": max(rps),
        "p99": statistics.median(p for _, p in results),
    }


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def fill(port: int, count: int) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port)
    payload = json.dumps(BODY)
    for _ in range(count):
        conn.request("POST", "/api/v1/payments", payload, AUTH)
        conn.getresponse().read()
    conn.close()


def run_suite(binary: str, port: int, base_port: int, tx_id: str, args) -> dict[str, tuple]:
    post = POST_LUA % (json.dumps(BODY), SK)
    get = GET_LUA % SK
    targets = {
        "POST /payments": (post, "/api/v1/payments"),
        "GET /payments/{id}": (get, f"/api/v1/payments/{tx_id}"),
        "GET /payments?status=completed&limit=50": (
            get,
            "/api/v1/payments?status=completed&limit=50",
        ),
    }
    rows = {}
    for label, (script, path) in targets.items():
        ours = measure(binary, f"http://127.0.0.1:{port}{path}", script, args.seconds, args.rounds)
        bare = measure(
            binary, f"http://127.0.0.1:{base_port}{path}", script, args.seconds, args.rounds
        )
        rows[label] = (ours, bare)
        print(
            f"  {label:<42} {ours['min']:7.0f} {ours['median']:7.0f} {ours['max']:7.0f} req/s"
            f"  p99 {ours['p99']:6.2f} ms | bare {bare['median']:7.0f} req/s"
            f"  ratio {ours['median'] / bare['median']:.2f}",
            flush=True,
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stored", type=int, default=50_000)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    binary = ensure_wrk()
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = str(Path(tmp) / "data")
        serve = [
            sys.executable,
            "-m",
            "payorch_cli.main",
            "serve",
            "--port",
            "0",
            "--no-rate-limit",
            "--data-dir",
            data_dir,
        ]
        server, port, boot = start(serve)
        print(f"payorch serve listening after {boot:.2f} s (empty store)")
        # 60 completed payments so the status=completed page is full.
        for _ in range(60):
            _, raw = call(port, "POST", "/api/v1/payments", BODY)
            tx_id = json.loads(raw)["transactionId"]
            call(port, "POST", f"/api/v1/payments/{tx_id}/simulate", {"action": "paid"})
        _, post_body = call(port, "POST", "/api/v1/payments", BODY)
        _, get_body = call(port, "GET", f"/api/v1/payments/{tx_id}")
        _, list_body = call(port, "GET", "/api/v1/payments?status=completed&limit=50")
        baseline, base_port, _ = start(
            [
                sys.executable,
                "-c",
                BASELINE,
                post_body.decode(),
                get_body.decode(),
                list_body.decode(),
            ]
        )
        try:
            print("empty store:")
            empty = run_suite(binary, port, base_port, tx_id, args)
            began = time.perf_counter()
            _, raw = call(port, "GET", "/api/v1/payments?limit=1")
            fill(port, max(0, args.stored - json.loads(raw)["pagination"]["total"]))
            print(
                f"filled to {args.stored} transactions in {time.perf_counter() - began:.1f} s;"
                f" RSS {rss_mb(server.pid):.0f} MB"
            )
            print(f"{args.stored} stored:")
            full = run_suite(binary, port, base_port, tx_id, args)
            for label in empty:
                ratio = full[label][0]["median"] / empty[label][0]["median"]
                print(f"  flat with data, {label:<42} {ratio:.2f} x the empty figure")
            print(f"server RSS with {args.stored} transactions: {rss_mb(server.pid):.0f} MB")
        finally:
            baseline.terminate()
            server.terminate()
            server.wait()
        restarted, _, boot = start(serve)
        print(f"start-up with {args.stored} stored transactions: {boot:.2f} s")
        restarted.terminate()
        restarted.wait()


if __name__ == "__main__":
    main()
