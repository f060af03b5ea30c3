"""Every operation at 32 connections: payorch, Prism mocking the same document, and bare aiohttp.

    python bench/ops_load.py --prism PATH [--seconds 5] [--rounds 3] [--only TEXT] [--pool N]
        [--paid-pool N]

One run, one table: each operation of bench/operations.py (every rail's `POST /payments` on the
sandbox and production catalogues with the buyer data it needs, the hosted card checkout,
checkout sessions, refund, simulate, get, lists with filters, payment methods, balances,
payouts, deposits, `auth/token`) is driven by wrk (2 threads, 32 connections) against three
servers started here, in alternating rounds:

- `payorch serve` (fresh data dir, `--no-rate-limit`), whose targets (payments, a deposit
  account, `--pool` pending payments for simulate, `--paid-pool` paid ones for refund, one each
  per request) are made first;
- Prism (`@stoplight/prism-cli` from npm: PATH is its `node_modules/.bin/prism`) mocking the
  document payorch serves (`GET /api/v1/openapi.json`), as bench/prism_ratio.py runs it: it
  ignores the document's relative server URL, so it is sent the path without `/api/v1`;
- a bare aiohttp app that answers every request with payorch's own answer to that operation
  (recorded first; the operation is named by a header), parsing the body of a POST with orjson:
  the cost of aiohttp and JSON alone for an answer of that size.

Per operation and server: the median requests/s of the rounds, the worst p99 of the rounds, the
server's CPU per request (user + system from /proc, which moves much less than throughput on a
shared machine), payorch's CPU for the work the operation left for later (its production
payments' provider callbacks, run by a clock advance right after its rounds: "settle") and the
answers that were not 2xx (a simulate or a refund beyond its pool stops
the run: make `--pool` / `--paid-pool` at least 2 x (rounds x seconds + 1) x its rate). Then the
targets of issue
32: payorch / Prism >= 3.0 for every operation, every rail >= 0.75 x the fastest rail, p99 under
20 ms. Run it on a quiet machine; on a shared one throughput moves by tens of percent, and the
CPU per request much less.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from _common import SK, bare_app_cmd, call, cpu_s, serve_cmd, start, stop
from http_load import ensure_wrk
from operations import Operation, Targets, operations
from prism_ratio import free_port, start_prism

# The bare app: payorch's recorded answer of the operation the `X-Op` header names.
BARE_HANDLERS = """
import orjson
ANSWERS = [bytes.fromhex(h) for h in orjson.loads(open(sys.argv[1]).read())]
async def answer(request):
    if request.method == "POST":
        await request.json(loads=orjson.loads)
    body = ANSWERS[int(request.headers["X-Op"])]
    return web.Response(body=body, content_type="application/json")
"""
# After each operation's rounds, the simulated clock moves on past its production payments'
# provider callbacks (30 s after each, fixtures/providers.yaml), so that they run there, counted
# as that operation's "settle" CPU, and not inside the next operations' rounds (where they once
# cost a later rail ten times its own work).
SETTLE_SECONDS = 31
# Each request of a thread is the next of its paths (a pending payment is marked paid once);
# the two threads take alternate ones.
LUA = """
local paths = {%s}
local body = %s
local headers = {["Authorization"] = "Bearer %s", ["Content-Type"] = "application/json",
                 ["X-Op"] = "%d"}
local step, n = 0, 0
function setup(thread)
  thread:set("first", step)
  step = step + 1
end
function init(args)
  n = %d + tonumber(first)
end
function request()
  local path = paths[(n %% #paths) + 1]
  n = n + 2
  return wrk.format("%s", path, headers, body)
end
"""


def lua_string(text: str) -> str:
    return json.dumps(text)  # a JSON string literal is a valid Lua one for this ASCII text


def script(
    op: Operation, index: int, paths: list[str], body: bytes | None, key: str, offset: int
) -> str:
    """wrk's script for `op`: its paths from `offset` on (where the runs before stopped)."""
    listed = ",".join(lua_string(path) for path in paths)
    lua_body = lua_string(body.decode()) if body is not None else "nil"
    return LUA % (listed, lua_body, key, index, offset, op.method)


def wrk(binary: str, url: str, lua: str, seconds: int) -> tuple[float, float, int, int]:
    """(requests/s, p99 ms, answers not 2xx, requests made) of one wrk run."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as handle:
        handle.write(lua)
    try:
        out = subprocess.run(
            [binary, "-t2", "-c32", f"-d{seconds}s", "--latency", "-s", handle.name, url],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        os.unlink(handle.name)
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]  # wrk prints it
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)\b", out)
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[p99.group(2)] if p99 else 0.0
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    made = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]  # wrk prints it
    latency = float(p99.group(1)) * scale if p99 else 0.0
    return rps, latency, int(bad.group(1)) if bad else 0, made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prism", help="the prism binary (node_modules/.bin/prism)")
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default="", help="operations whose name holds this")
    parser.add_argument(
        "--pool", type=int, help="pending payments for simulate (default: 8,000 per second run)"
    )
    parser.add_argument(
        "--paid-pool", type=int, help="paid payments for refund (default: 4,000 per second run)"
    )
    args = parser.parse_args()
    binary = ensure_wrk()
    ops = [op for op in operations() if args.only in op.name]
    with tempfile.TemporaryDirectory() as tmp:
        ours, port, _ = start(serve_cmd(Path(tmp) / "data"))

        def ask(method: str, path: str, body: object, key: str) -> tuple[int, bytes]:
            data = json.loads(body) if isinstance(body, bytes) else body
            auth = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
            return call(port, method, path, data, auth)

        began = time.perf_counter()
        pools = pool_sizes(ops, args)
        targets = Targets(ask, **pools)
        print(
            f"targets made in {time.perf_counter() - began:.0f} s ({pools['pending']} pending"
            f" payments, {pools['paid']} paid)"
        )
        plans = []
        answers = []
        for index, op in enumerate(ops):
            count = pools[op.pool] if op.pool is not None else 8
            requests = [targets.request(op) for _ in range(count)]
            # A fresh target's last is kept for the recorded answer below.
            paths = [path for path, _ in (requests[:-1] if op.fresh else requests)]
            body = requests[0][1]
            plans.append((op, index, paths, body))
            # The answer to record for the bare app: another of the same (a fresh target's
            # is the last pending payment's, so the pool stays whole).
            path, raw_body = targets.request(op) if not op.fresh else requests[-1]
            _status, answer = ask(op.method, path, raw_body, op.key)
            answers.append(answer.hex())
        answers_file = Path(tmp) / "answers.json"
        answers_file.write_text(json.dumps(answers))
        bare, bare_port, _ = start(
            bare_app_cmd(BARE_HANDLERS, [("*", "/{tail:.*}", "answer")], str(answers_file))
        )
        prism, prism_port = None, 0
        if args.prism:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/openapi.json") as doc:
                document = Path(tmp) / "openapi.json"
                document.write_bytes(doc.read())
            prism_port = free_port()
            prism = start_prism(args.prism, document, prism_port)
        try:
            rows = run(binary, plans, args, (ours, port), (bare, bare_port), prism, prism_port)
        finally:
            stop(ours)
            bare.terminate()
            if prism is not None:
                prism.terminate()
                prism.wait(10)
    report(rows, args)


def pool_sizes(ops: list[Operation], args: argparse.Namespace) -> dict[str, int]:
    """Payments for the operations that take one each: enough for simulate at 4,000 req/s and
    refund at 2,000 over every round and the warm-up (twice that: the two threads' steps leave
    gaps, see `run`). Each is a payment in the store while the other operations run (the lists
    and balances read the same store in both cases)."""
    runs = args.rounds * args.seconds + 1
    wanted = {
        "pending": args.pool if args.pool is not None else runs * 8_000,
        "paid": args.paid_pool if args.paid_pool is not None else runs * 4_000,
    }
    return {pool: n if any(op.pool == pool for op in ops) else 0 for pool, n in wanted.items()}


def run(binary, plans, args, ours, bare, prism, prism_port) -> list[dict]:  # type: ignore[no-untyped-def]  # a script
    servers = {"payorch": ours, "bare": bare}
    if prism is not None:
        servers["prism"] = (prism, prism_port)
    rows = []
    for op, index, paths, body in plans:
        results: dict[str, list[tuple[float, float, int, float]]] = {n: [] for n in servers}
        offsets = dict.fromkeys(servers, 0)
        for round_ in range(args.rounds + 1):  # the first is a warm-up
            for name, (proc, port) in servers.items():
                # Prism serves the document's paths without the server URL's /api/v1.
                its = [p.removeprefix("/api/v1") for p in paths] if name == "prism" else paths
                lua = script(op, index, its, body, op.key, offsets[name])
                seconds = 1 if round_ == 0 else args.seconds
                before = cpu_s(proc.pid)
                rps, p99, bad, made = wrk(binary, f"http://127.0.0.1:{port}", lua, seconds)
                used = cpu_s(proc.pid) - before
                # Each thread steps by 2 from its own start, and one may make more requests than
                # the other: twice the total is past both (and the requests cut short at the end).
                offsets[name] += 2 * made + 64
                if round_:
                    cpu = used / max(rps * seconds, 1) * 1e6
                    results[name].append((rps, p99, bad, cpu))
        settle_began = cpu_s(ours[0].pid)
        auth = {"Authorization": f"Bearer {SK}", "Content-Type": "application/json"}
        call(ours[1], "POST", "/_sim/clock/advance", {"seconds": SETTLE_SECONDS}, auth)
        row: dict = {"op": op, "settle": cpu_s(ours[0].pid) - settle_began}
        for name, rounds in results.items():
            row[name] = {
                "rps": statistics.median(r[0] for r in rounds),
                "p99": max(r[1] for r in rounds),
                "bad": sum(r[2] for r in rounds),
                "cpu": statistics.median(r[3] for r in rounds),
            }
        rows.append(row)
        print(line(row), flush=True)
    return rows


def line(row: dict) -> str:
    ours, bare, prism = row["payorch"], row["bare"], row.get("prism")
    text = (
        f"{row['op'].name:<58} {ours['rps']:>7,.0f} {ours['p99']:>6.1f} {ours['cpu']:>6.0f}"
        f" {row['settle']:>6.2f} {bare['rps']:>7,.0f} {ours['rps'] / bare['rps']:>5.2f}"
    )
    if prism is not None:
        text += f" {prism['rps']:>7,.0f} {prism['cpu']:>6.0f} {ours['rps'] / prism['rps']:>5.2f}"
    bad = {name: row[name]["bad"] for name in ("payorch", "bare", "prism") if name in row}
    flagged = ", ".join(f"{name} {n}" for name, n in bad.items() if n)
    return text + (f"  not 2xx: {flagged}" if flagged else "")


def report(rows: list[dict], args: argparse.Namespace) -> None:
    print()
    print(
        f"wrk 2 threads, 32 connections; {args.rounds} alternating rounds of {args.seconds} s"
        " after a 1 s warm-up; req/s the median, p99 (ms) the worst round's, CPU in us/request;"
        f" settle: payorch's CPU seconds for a {SETTLE_SECONDS} s clock advance after the rounds"
    )
    head = f"{'operation':<58} {'payorch':>7} {'p99':>6} {'CPU':>6} {'settle':>6} {'bare':>7}"
    head += f" {'x':>5}"
    if "prism" in rows[0]:
        head += f" {'prism':>7} {'CPU':>6} {'x':>5}"
    print(head)
    for row in rows:
        print(line(row))
    rails = [row for row in rows if row["op"].rail]
    if rails:
        fastest = max(row["payorch"]["rps"] for row in rails)
        slowest = min(rails, key=lambda row: row["payorch"]["rps"])
        ratio = slowest["payorch"]["rps"] / fastest
        verdict = "met" if ratio >= 0.75 else "NOT met"
        print(f"slowest rail {slowest['op'].name}: {ratio:.2f} x the fastest (>= 0.75: {verdict})")
    worst = max(rows, key=lambda row: row["payorch"]["p99"])
    verdict = "met" if worst["payorch"]["p99"] < 20 else "NOT met"
    print(f"worst p99 {worst['payorch']['p99']:.1f} ms, {worst['op'].name} (< 20 ms: {verdict})")
    if "prism" in rows[0]:
        low = min(rows, key=lambda row: row["payorch"]["rps"] / row["prism"]["rps"])
        ratio = low["payorch"]["rps"] / low["prism"]["rps"]
        verdict = "met" if ratio >= 3.0 else "NOT met"
        print(f"lowest payorch / prism {ratio:.2f} x, {low['op'].name} (>= 3.0: {verdict})")


if __name__ == "__main__":
    main()
