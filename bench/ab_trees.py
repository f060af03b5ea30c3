"""Before/after in one run: the hot endpoints of two source trees, measured in alternation.

For a change that must not cost throughput (a refactor, a feature on the request path), check the
old tree out beside this one (`git worktree add /tmp/before <commit>`) and run

    python bench/ab_trees.py /tmp/before . [--seconds 5] [--rounds 5] [--production]

Each round starts `payorch serve` from each tree in turn (fresh data dir, --no-rate-limit, the
tree first on PYTHONPATH), prepares 60 completed payments, and drives `POST /payments`,
`GET /payments/{id}` and `GET /payments?status=completed&limit=50` with wrk at 32 connections,
exactly as `http_load.py` does. Alternating A, B, A, B... spreads the machine's drift over both;
it prints each tree's median requests/s and p99 per endpoint and the ratio B/A of the medians,
and the server's own CPU time per request (user + system, read from /proc): on a machine other
work is loading, throughput swings by tens of percent from round to round, CPU per request much
less, so that is the figure to compare there. `--production` sends the `POST /payments` with a
production secret key instead, so each one runs the production cascade (the provider world).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path

from _common import BODY, ENV, SK, cpu_s, serve_cmd, start, stop

LIVE_SK = "sk_live_lvuyxno67qob31r1gq32rfwr"  # production secret key of shp_mazul_tienda
from http_load import GET_LUA, POST_LUA, ensure_wrk, prepare, wrk

ENDPOINTS = ("POST /payments", "GET /payments/{id}", "GET /payments?status=completed")


def one_round(
    tree: Path, binary: str, seconds: int, post_key: str = SK
) -> dict[str, tuple[float, float, float]]:
    # `python -m` looks in the working directory first, then PYTHONPATH: both name the tree.
    env_before, cwd_before = dict(ENV), os.getcwd()
    ENV["PYTHONPATH"] = str(tree)
    os.chdir(tree)
    try:
        with tempfile.TemporaryDirectory() as data:
            proc, port, _ = start([*serve_cmd(Path(data) / "d")])
            try:
                tx_id = prepare(port)
                base = f"http://127.0.0.1:{port}/api/v1"
                post = POST_LUA % (json.dumps(BODY), post_key)
                get = GET_LUA % SK
                scripts = {
                    ENDPOINTS[0]: (f"{base}/payments", post),
                    ENDPOINTS[1]: (f"{base}/payments/{tx_id}", get),
                    ENDPOINTS[2]: (f"{base}/payments?status=completed&limit=50", get),
                }
                results = {}
                for name, (url, script) in scripts.items():
                    wrk(binary, url, script, 1)  # warm-up
                    cpu_before = cpu_s(proc.pid)
                    rps, p99 = wrk(binary, url, script, seconds)
                    cpu_us = (cpu_s(proc.pid) - cpu_before) / (rps * seconds) * 1e6
                    results[name] = (rps, p99, cpu_us)
                return results
            finally:
                stop(proc)
    finally:
        ENV.clear()
        ENV.update(env_before)
        os.chdir(cwd_before)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--production", action="store_true", help="POST /payments with a production key"
    )
    args = parser.parse_args()
    post_key = LIVE_SK if args.production else SK
    binary = ensure_wrk()
    trees = {"A": args.before.resolve(), "B": args.after.resolve()}
    runs: dict[str, list[dict[str, tuple[float, float, float]]]] = {"A": [], "B": []}
    for round_no in range(args.rounds):
        order = ("A", "B") if round_no % 2 == 0 else ("B", "A")
        for label in order:
            runs[label].append(one_round(trees[label], binary, args.seconds, post_key))
    print(f"A = {trees['A']}\nB = {trees['B']}")
    keys = "production" if args.production else "sandbox"
    print(f"{args.rounds} alternating rounds of {args.seconds} s, 32 connections")
    print(f"POST /payments with a {keys} key\n")
    print(
        f"{'endpoint':34} {'A req/s':>9} {'B req/s':>9} {'B/A':>6} {'A p99':>8} {'B p99':>8}"
        f" {'A cpu/req':>10} {'B cpu/req':>10} {'B/A':>6}"
    )
    for name in ENDPOINTS:
        med = {k: statistics.median(r[name][0] for r in runs[k]) for k in runs}
        p99 = {k: statistics.median(r[name][1] for r in runs[k]) for k in runs}
        cpu = {k: statistics.median(r[name][2] for r in runs[k]) for k in runs}
        print(
            f"{name:34} {med['A']:9.0f} {med['B']:9.0f} {med['B'] / med['A']:6.3f}"
            f" {p99['A']:6.1f}ms {p99['B']:6.1f}ms"
            f" {cpu['A']:8.0f}us {cpu['B']:8.0f}us {cpu['B'] / cpu['A']:6.3f}"
        )
        low = {k: min(r[name][0] for r in runs[k]) for k in runs}
        high = {k: max(r[name][0] for r in runs[k]) for k in runs}
        print(f"{'':34} range A {low['A']:.0f}-{high['A']:.0f}, B {low['B']:.0f}-{high['B']:.0f}")


if __name__ == "__main__":
    main()
