"""Before/after in one run: the hot endpoints of two source trees, measured in alternation.

For a change that must not cost throughput (a refactor, a feature on the request path), check the
old tree out beside this one (`git worktree add /tmp/before <commit>`) and run

    python bench/ab_trees.py /tmp/before . [--seconds 5] [--rounds 5]

Each round starts `payorch serve` from each tree in turn (fresh data dir, --no-rate-limit, the
tree first on PYTHONPATH), prepares 60 completed payments, and drives `POST /payments`,
`GET /payments/{id}` and `GET /payments?status=completed&limit=50` with wrk at 32 connections,
exactly as `http_load.py` does. Alternating A, B, A, B... spreads the machine's drift over both;
it prints each tree's median requests/s and p99 per endpoint and the ratio B/A of the medians,
and the server's CPU time per request (user + system, from /proc): on a machine other work keeps
busy, throughput swings with the load while CPU per request stays put, so its ratio is the figure
to trust for a small difference.

The two sides may be one tree served with two sets of `serve` arguments, for the cost of a
feature that can be turned off; the request log's, for instance:

    python bench/ab_trees.py . . --a-args="--request-log 0" [--endpoints 1]

`--live-endpoints` adds two more, with a production secret key: `POST /payments` through the
cascade (SPEI: one provider) and through a failover (card method 1004: its first provider is in
outage, the second takes it), the request path of the provider world and the cascade trace.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import tempfile
from pathlib import Path

from _common import BODY, ENV, LIVE_SK, SK, cpu_s, serve_cmd, start, stop
from http_load import GET_LUA, POST_LUA, ensure_wrk, prepare, wrk

# The key `POST /payments` is sent with: `--production` makes it the production cascade's.
POST_KEY = {"key": SK}
ENDPOINTS = ("POST /payments", "GET /payments/{id}", "GET /payments?status=completed")
LIVE_ENDPOINTS = ("POST /payments live", "POST /payments live failover")
FAILOVER_BODY = {"amount": 50, "paymentMethodId": "1004"}


# (requests/s, p99 ms, server CPU µs per request)
Result = tuple[float, float, float]


def one_round(
    tree: Path, binary: str, seconds: int, extra: list[str], endpoints: tuple[str, ...]
) -> dict[str, Result]:
    # `python -m` looks in the working directory first, then PYTHONPATH: both name the tree.
    env_before, cwd_before = dict(ENV), os.getcwd()
    ENV["PYTHONPATH"] = str(tree)
    os.chdir(tree)
    try:
        with tempfile.TemporaryDirectory() as data:
            proc, port, _ = start([*serve_cmd(Path(data) / "d"), *extra])
            try:
                tx_id = prepare(port)
                base = f"http://127.0.0.1:{port}/api/v1"
                post = POST_LUA % (json.dumps(BODY), POST_KEY["key"])
                get = GET_LUA % SK
                scripts = {
                    ENDPOINTS[0]: (f"{base}/payments", post),
                    ENDPOINTS[1]: (f"{base}/payments/{tx_id}", get),
                    ENDPOINTS[2]: (f"{base}/payments?status=completed&limit=50", get),
                    LIVE_ENDPOINTS[0]: (
                        f"{base}/payments",
                        POST_LUA % (json.dumps(BODY), LIVE_SK),
                    ),
                    LIVE_ENDPOINTS[1]: (
                        f"{base}/payments",
                        POST_LUA % (json.dumps(FAILOVER_BODY), LIVE_SK),
                    ),
                }
                results = {}
                for name in endpoints:
                    url, script = scripts[name]
                    wrk(binary, url, script, 1)  # warm-up
                    cpu = cpu_s(proc.pid)
                    rps, p99 = wrk(binary, url, script, seconds)
                    per_request = (cpu_s(proc.pid) - cpu) / (rps * seconds) * 1e6
                    results[name] = (rps, p99, per_request)
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
    parser.add_argument("--a-args", default="", help="Extra `payorch serve` arguments for A.")
    parser.add_argument("--b-args", default="", help="Extra `payorch serve` arguments for B.")
    parser.add_argument(
        "--endpoints", type=int, default=len(ENDPOINTS), help="Measure the first N endpoints."
    )
    parser.add_argument(
        "--production",
        action="store_true",
        help="POST /payments with a production key: each one runs the production cascade.",
    )
    parser.add_argument(
        "--live-endpoints", action="store_true", help=" and ".join(LIVE_ENDPOINTS) + " too"
    )
    args = parser.parse_args()
    if args.production:
        POST_KEY["key"] = LIVE_SK
    binary = ensure_wrk()
    trees = {"A": args.before.resolve(), "B": args.after.resolve()}
    extra = {"A": shlex.split(args.a_args), "B": shlex.split(args.b_args)}
    endpoints = ENDPOINTS[: args.endpoints] + (LIVE_ENDPOINTS if args.live_endpoints else ())
    runs: dict[str, list[dict[str, Result]]] = {"A": [], "B": []}
    for round_no in range(args.rounds):
        order = ("A", "B") if round_no % 2 == 0 else ("B", "A")
        for label in order:
            runs[label].append(
                one_round(trees[label], binary, args.seconds, extra[label], endpoints)
            )
    for label in ("A", "B"):
        print(f"{label} = {trees[label]} {' '.join(extra[label])}".rstrip())
    keys = "production" if args.production else "sandbox"
    print(f"{args.rounds} alternating rounds of {args.seconds} s, 32 connections")
    print(f"POST /payments with a {keys} key\n")
    print(f"{'endpoint':34} {'A req/s':>9} {'B req/s':>9} {'B/A':>6} {'A p99':>8} {'B p99':>8}")
    for name in endpoints:
        med = {k: statistics.median(r[name][0] for r in runs[k]) for k in runs}
        p99 = {k: statistics.median(r[name][1] for r in runs[k]) for k in runs}
        print(
            f"{name:34} {med['A']:9.0f} {med['B']:9.0f} {med['B'] / med['A']:6.3f}"
            f" {p99['A']:6.1f}ms {p99['B']:6.1f}ms"
        )
        low = {k: min(r[name][0] for r in runs[k]) for k in runs}
        high = {k: max(r[name][0] for r in runs[k]) for k in runs}
        print(f"{'':34} range A {low['A']:.0f}-{high['A']:.0f}, B {low['B']:.0f}-{high['B']:.0f}")
        cpu = {k: sorted(r[name][2] for r in runs[k]) for k in runs}
        mid = {k: statistics.median(cpu[k]) for k in runs}
        print(
            f"{'':34} server CPU per request: A {mid['A']:.0f} µs ({cpu['A'][0]:.0f}-"
            f"{cpu['A'][-1]:.0f}), B {mid['B']:.0f} µs ({cpu['B'][0]:.0f}-{cpu['B'][-1]:.0f}),"
            f" B/A {mid['B'] / mid['A']:.3f}"
        )


if __name__ == "__main__":
    main()
