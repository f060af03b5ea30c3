"""Namespaces: what many isolated worlds in one `payorch serve` cost (design.md 1.6, issue 24).

One run, real servers (`payorch serve`, fresh data dir, --no-rate-limit):

1. create: --namespaces PUT /_sim/namespaces/{name} over one keep-alive connection: median and
   p99 latency (client side, request sent -> answer read).
2. memory: 10 payments in each namespace (its own key, so routed by credential), then the
   server's RSS against its RSS before the first namespace: MB per namespace, with every
   namespace's world still in memory (the default limit keeps 1,000; an idle one unloaded
   frees its part).
3. reload: the first request to namespaces whose worlds are not in memory (a server restarted
   on the same data dir loads nothing at start): median and p99.
4. start-up: `payorch serve` to "Listening on" with --namespaces namespaces on disk, against an
   empty data dir (min/median/max over --rounds).
5. spread: POST /payments over --spread namespaces (each request with the next namespace's key)
   against the same load with one namespace's key, 4 keep-alive connections, --requests each,
   rounds alternated; the ratio of the throughputs and of the server's CPU time per request
   (target >= 0.9).
6. clock: POST /_sim/clock/advance by 30 days in one namespace holding 10 payments, on the
   server with --namespaces namespaces, against a server with that namespace alone (each after
   a warm-up advance of another namespace); with the server's CPU time for the call, and
   another namespace's clock offset after it (the others' worlds do nothing: no scheduler,
   clock or job of theirs is touched).

    python bench/namespaces.py [--namespaces 1000] [--spread 100] [--requests 500] [--rounds 3]
"""

from __future__ import annotations

import argparse
import http.client
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from _common import SK, cpu_s, rss_mb, serve_cmd, start, stop

BODY = json.dumps({"amount": 50, "paymentMethodId": "1001", "userEmail": "bench@example.com"})
SHOP = "shp_mazul_tienda"
THIRTY_DAYS = 30 * 86_400


class Conn:
    """One keep-alive connection to the server."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port)

    def call(self, method: str, path: str, key: str, body: str | None = None) -> tuple[int, bytes]:
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        self.conn.request(method, path, body, headers)
        response = self.conn.getresponse()
        return response.status, response.read()

    def timed(self, method: str, path: str, key: str, body: str | None = None) -> float:
        began = time.perf_counter()
        status, data = self.call(method, path, key, body)
        if status >= 300:
            raise RuntimeError(f"{method} {path}: {status} {data[:200]!r}")
        return (time.perf_counter() - began) * 1000


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def shop_key(namespace: dict[str, object]) -> str:
    keys = namespace["keys"]
    assert isinstance(keys, list)
    return next(
        k["secretKey"] for k in keys if k["shopId"] == SHOP and k["environment"] == "sandbox"
    )


def create_all(conn: Conn, count: int) -> tuple[list[float], list[str]]:
    latencies, keys = [], []
    for i in range(count):
        began = time.perf_counter()
        status, raw = conn.call("PUT", f"/_sim/namespaces/bench-{i}", SK)
        latencies.append((time.perf_counter() - began) * 1000)
        assert status == 201, raw
        keys.append(shop_key(json.loads(raw)))
    return latencies, keys


def throughput(port: int, keys: list[str], requests: int, connections: int = 4) -> float:
    """POST /payments per second over `connections` keep-alive connections, each request with
    the next key of `keys`."""
    errors: list[str] = []

    def worker(offset: int) -> None:
        conn = Conn(port)
        for i in range(requests):
            status, data = conn.call(
                "POST", "/api/v1/payments", keys[(offset + i) % len(keys)], BODY
            )
            if status != 200:
                errors.append(f"{status} {data[:200]!r}")
                return

    threads = [threading.Thread(target=worker, args=(c * 7,)) for c in range(connections)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    if errors:
        raise RuntimeError(errors[0])
    return connections * requests / elapsed


def advance(port: int, pid: int, key: str) -> tuple[float, float]:
    conn = Conn(port)
    cpu = cpu_s(pid)
    ms = conn.timed("POST", "/_sim/clock/advance", key, json.dumps({"seconds": THIRTY_DAYS}))
    return ms, cpu_s(pid) - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--namespaces", type=int, default=1000)
    parser.add_argument("--spread", type=int, default=100)
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    n = args.namespaces
    work = Path(tempfile.mkdtemp(prefix="payorch-ns-bench-"))
    try:
        data = work / "data"
        proc, port, _ = start(serve_cmd(data))
        conn = Conn(port)
        conn.call("GET", "/api/v1/ping", SK)  # default's world warm
        before = rss_mb(proc.pid)
        latencies, keys = create_all(conn, n)
        print(
            f"create ({n}): median {statistics.median(latencies):.2f} ms, "
            f"p99 {p99(latencies):.2f} ms, max {max(latencies):.2f} ms"
        )
        began = time.perf_counter()
        for key in keys:
            for _ in range(10):
                conn.timed("POST", "/api/v1/payments", key, BODY)
        filled = time.perf_counter() - began
        after = rss_mb(proc.pid)
        print(
            f"memory: {n} namespaces x 10 payments in {filled:.1f} s; RSS {before:.1f} -> "
            f"{after:.1f} MB: {(after - before) / n:.3f} MB per namespace"
        )
        stop(proc)

        # Reload: a restarted server has nothing in memory; time each namespace's first request.
        proc, port, _ = start(serve_cmd(data))
        conn = Conn(port)
        sample = keys[:: max(1, n // 100)]
        reloads = [conn.timed("GET", "/api/v1/me/balance", key) for key in sample]
        again = [conn.timed("GET", "/api/v1/me/balance", key) for key in sample]
        print(
            f"reload ({len(sample)} namespaces not in memory): first request median "
            f"{statistics.median(reloads):.2f} ms, p99 {p99(reloads):.2f} ms; loaded: median "
            f"{statistics.median(again):.2f} ms"
        )
        stop(proc)

        # Start-up with n namespaces on disk, against an empty data dir, rounds alternated.
        starts: dict[str, list[float]] = {"empty": [], f"{n} namespaces": []}
        for _ in range(args.rounds):
            for label, directory in zip(starts, (work / "empty", data), strict=True):
                proc, _, elapsed = start(serve_cmd(directory))
                starts[label].append(elapsed)
                stop(proc)
        for label, times in starts.items():
            print(
                f"start-up, {label}: min {min(times):.3f} s, median "
                f"{statistics.median(times):.3f} s, max {max(times):.3f} s"
            )

        # Spread: the same load over many namespaces and over one, rounds alternated so that
        # the machine's drift falls on both; wall-clock throughput and the server's CPU time per
        # request (the steadier figure on a shared machine).
        proc, port, _ = start(serve_cmd(data))
        spread_keys = keys[: args.spread]
        # Every world of the spread loaded and warm before the first round: each connection
        # walks all the keys (with fewer requests than keys, connections starting 7 keys apart
        # would leave the last worlds to be loaded, from disk, inside the first "many" round).
        throughput(port, spread_keys, max(50, len(spread_keys)))
        rates: dict[str, list[float]] = {"one": [], "many": []}
        cpu_per: dict[str, list[float]] = {"one": [], "many": []}
        for _ in range(args.rounds):
            for label, chosen in (("one", spread_keys[:1]), ("many", spread_keys)):
                cpu = cpu_s(proc.pid)
                rates[label].append(throughput(port, chosen, args.requests))
                cpu_per[label].append((cpu_s(proc.pid) - cpu) / (4 * args.requests) * 1000)
        for label in rates:
            print(
                f"  rounds, {label}: "
                + ", ".join(
                    f"{r:.0f} req/s {c:.3f} ms"
                    for r, c in zip(rates[label], cpu_per[label], strict=True)
                )
            )
        one, many = statistics.median(rates["one"]), statistics.median(rates["many"])
        cpu_one, cpu_many = statistics.median(cpu_per["one"]), statistics.median(cpu_per["many"])
        print(
            f"POST /payments: {args.spread} namespaces {many:.0f} req/s, one namespace "
            f"{one:.0f} req/s: ratio {many / one:.2f}; server CPU per request {cpu_many:.2f} "
            f"vs {cpu_one:.2f} ms: throughput ratio by CPU {cpu_one / cpu_many:.2f}"
        )
        stop(proc)

        # Clock: 30 days in one namespace holding 10 payments, on the server with n namespaces,
        # against a server with that namespace alone. Each server first advances another
        # namespace the same way (the first advance of a process pays for code paths run once),
        # then the measured one; the other namespaces' clocks are read after.
        proc, port, _ = start(serve_cmd(data))
        advance(port, proc.pid, keys[-2])
        ms, cpu = advance(port, proc.pid, keys[-1])
        _, raw = Conn(port).call("GET", "/_sim/clock", keys[0])
        others = json.loads(raw)["offsetSeconds"]
        stop(proc)
        alone = work / "alone"
        proc, port, _ = start(serve_cmd(alone))
        conn = Conn(port)
        pair = []
        for name in ("warm", "alone"):
            _, raw = conn.call("PUT", f"/_sim/namespaces/bench-{name}", SK)
            pair.append(shop_key(json.loads(raw)))
            for _ in range(10):
                conn.timed("POST", "/api/v1/payments", pair[-1], BODY)
        advance(port, proc.pid, pair[0])
        ms_alone, cpu_alone = advance(port, proc.pid, pair[1])
        stop(proc)
        print(
            f"clock advance 30 days in one namespace: among {n}: {ms:.1f} ms "
            f"(server CPU {cpu * 1000:.0f} ms); alone: {ms_alone:.1f} ms "
            f"(server CPU {cpu_alone * 1000:.0f} ms); another namespace's clock after: "
            f"offset {others:.1f} s"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
