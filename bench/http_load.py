"""Throughput and latency of the hot endpoints at 32 connections, against a bare aiohttp baseline.

Starts, in this run: `payorch serve` (fresh data dir, --no-rate-limit) and a bare aiohttp app that
parses the same body and encodes a same-sized JSON document per request, both with orjson (the
faster of the two bare endpoints the issue quotes: 7,000 req/s with stdlib json, 10,000 with
orjson). Drives both with wrk (Debian's `wrk`, installed if missing) at 32 connections, warm-up
plus --rounds rounds of --seconds, and prints min/median/max requests/s, the median and the worst
p99 latency of the rounds, and the ratio of the medians to the baseline's. POST is also run
against a "floor" app (FLOOR_HANDLERS: the least a stateful create does, on the same stack), to
show how much of the gap to the bare endpoint any persisted create pays before its own logic.

Then a second `payorch serve` on a fresh data dir is filled with exactly --stored payments
(its RSS is printed then) and the same rounds run against it ("flat with data": the ratio of
each median to the empty store's). The POST rounds add to the store as they go.
Start-up time on a stored data dir is `bench/startup.py`'s.

    python bench/http_load.py [--stored 50000] [--seconds 5] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from _common import BODY, SK, bare_app_cmd, call, fill, rss_mb, serve_cmd, start, stop, stored

# The documents payorch answered, decoded: the baseline encodes a same-sized one per request.
BASELINE_HANDLERS = """
import orjson
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
"""
BASELINE_ROUTES = [
    ("POST", "/api/v1/payments", "post"),
    ("GET", "/api/v1/payments/{id}", "get"),
    ("GET", "/api/v1/payments", "listing"),
]

# The least a stateful create must do, as a second reference for POST: parse and validate the
# body, make the record (payorch's own response, with a fresh id and time), append it to a
# journal with one write, keep it in memory and in a time index, and answer it. No
# authentication, pricing, routing, ids worth the name or scheduling: what payorch does beyond
# this is what its ratio to this floor measures.
FLOOR_HANDLERS = """
import orjson, os, time, secrets, jsonschema_rs
RECORD = orjson.loads(sys.argv[1])
JOURNAL = os.open(sys.argv[2], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
VALID = jsonschema_rs.validator_for({
    "type": "object", "required": ["amount"], "additionalProperties": False,
    "properties": {"amount": {"type": "number", "exclusiveMinimum": 0},
                   "paymentMethodId": {"type": "string"}, "userEmail": {"type": "string"}},
}).is_valid
STORED, INDEX = {}, []
async def post(request):
    body = await request.json(loads=orjson.loads)
    if not VALID(body):
        raise web.HTTPBadRequest()
    record = dict(RECORD, transactionId="TXN-" + secrets.token_hex(8), createdAt=time.time())
    raw = orjson.dumps(record)
    head = b'[["transactions",' + orjson.dumps(record["transactionId"]) + b","
    os.write(JOURNAL, head + raw + b"]]\\n")
    STORED[record["transactionId"]] = raw
    INDEX.append((record["createdAt"], record["transactionId"]))
    return web.Response(body=raw, content_type="application/json")
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
    p99 = [p for _, p in results]
    return {
        "min": min(rps),
        "median": statistics.median(rps),
        "max": max(rps),
        "p99": statistics.median(p99),
        "worst_p99": max(p99),
    }


def prepare(port: int) -> str:
    """60 completed payments (so the status=completed page is full); the id of the last."""
    for _ in range(60):
        _, raw = call(port, "POST", "/api/v1/payments", BODY)
        tx_id = json.loads(raw)["transactionId"]
        call(port, "POST", f"/api/v1/payments/{tx_id}/simulate", {"action": "paid"})
    return tx_id


def run_suite(
    binary: str, port: int, base_port: int, tx_id: str, args, floor_port: int | None = None
) -> dict[str, tuple]:
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
            f"  p99 {ours['p99']:6.2f} ms (worst {ours['worst_p99']:6.2f})"
            f" | bare {bare['median']:7.0f} req/s"
            f"  ratio {ours['median'] / bare['median']:.2f}",
            flush=True,
        )
        if floor_port is not None and label.startswith("POST"):
            floor = measure(
                binary, f"http://127.0.0.1:{floor_port}{path}", script, args.seconds, args.rounds
            )
            print(
                f"  {'  floor (parse, validate, journal, answer)':<42} {floor['min']:7.0f}"
                f" {floor['median']:7.0f} {floor['max']:7.0f} req/s"
                f"  p99 {floor['p99']:6.2f} ms (worst {floor['worst_p99']:6.2f})"
                f" | ratio to bare {floor['median'] / bare['median']:.2f};"
                f" payorch to floor {ours['median'] / floor['median']:.2f}",
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
        server, port, boot = start(serve_cmd(Path(tmp) / "empty"))
        print(f"payorch serve listening after {boot:.2f} s (empty store)")
        tx_id = prepare(port)
        _, post_body = call(port, "POST", "/api/v1/payments", BODY)
        _, get_body = call(port, "GET", f"/api/v1/payments/{tx_id}")
        _, list_body = call(port, "GET", "/api/v1/payments?status=completed&limit=50")
        baseline, base_port, _ = start(
            bare_app_cmd(
                BASELINE_HANDLERS,
                BASELINE_ROUTES,
                post_body.decode(),
                get_body.decode(),
                list_body.decode(),
            )
        )
        floor, floor_port, _ = start(
            bare_app_cmd(
                FLOOR_HANDLERS,
                [("POST", "/api/v1/payments", "post")],
                post_body.decode(),
                str(Path(tmp) / "floor.journal"),
            )
        )
        try:
            print("empty store:")
            empty = run_suite(binary, port, base_port, tx_id, args, floor_port)
            floor.terminate()
            stop(server)
            server, port, _ = start(serve_cmd(Path(tmp) / "stored"))
            began = time.perf_counter()
            tx_id = prepare(port)
            fill(port, args.stored - stored(port))
            count = stored(port)
            print(
                f"filled a fresh store with {count} payments"
                f" in {time.perf_counter() - began:.0f} s;"
                f" server RSS {rss_mb(server.pid):.0f} MB"
            )
            print(f"{count} stored:")
            full = run_suite(binary, port, base_port, tx_id, args)
            for label in empty:
                ratio = full[label][0]["median"] / empty[label][0]["median"]
                print(f"  flat with data, {label:<42} {ratio:.2f} x the empty figure")
            print(
                f"server RSS after the rounds ({stored(port)} payments):"
                f" {rss_mb(server.pid):.0f} MB"
            )
        finally:
            baseline.terminate()
            floor.terminate()
            stop(server)


if __name__ == "__main__":
    main()
