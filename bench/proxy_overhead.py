"""`payorch proxy`'s overhead: the same requests to a `payorch serve`, directly and through a
recording proxy in front of it, side by side (issue 35's bound: at most 2 ms median and 10 ms
p99 added per request).

Starts its own `payorch serve` (fresh data dir, no rate limit) and `payorch proxy --upstream` it
(its recording in a temporary directory, redaction and all). Sequential requests, one keep-alive
connection to each, alternating direct / proxied request by request so both see the same load:
`GET /api/v1/ping` (small), `POST /api/v1/payments` (a write with a buyer's e-mail to redact) and
`GET /api/v1/payments?limit=50` (a 50-item page, about 40 KB). Prints min/median/p99/max in ms
for each and the added median and p99 (proxied minus direct).

    python bench/proxy_overhead.py [--samples 500] [--warmup 50]
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import AUTH, BODY, serve_cmd, start, stop

PAYLOAD = json.dumps(BODY)
REQUESTS = (
    ("GET /ping", "GET", "/api/v1/ping", None),
    ("POST /payments", "POST", "/api/v1/payments", PAYLOAD),
    ("GET /payments?limit=50", "GET", "/api/v1/payments?limit=50", None),
)


def timed(conn: http.client.HTTPConnection, method: str, path: str, body: str | None) -> float:
    began = time.perf_counter()
    conn.request(method, path, body, AUTH)
    response = conn.getresponse()
    response.read()
    elapsed = (time.perf_counter() - began) * 1000
    assert response.status == 200, (method, path, response.status)
    return elapsed


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98]


def row(label: str, values: list[float]) -> str:
    return (
        f"  {label:<8} min {min(values):6.2f}  median {statistics.median(values):6.2f}  "
        f"p99 {p99(values):6.2f}  max {max(values):7.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server, server_port, _ = start(serve_cmd(Path(tmp) / "data"))
        proxy_cmd = [
            sys.executable,
            "-m",
            "payorch_cli.main",
            "proxy",
            "--upstream",
            f"http://127.0.0.1:{server_port}",
            "--port",
            "0",
            "--out",
            str(Path(tmp) / "rec"),
        ]
        proxy, proxy_port, _ = start(proxy_cmd)
        try:
            direct = http.client.HTTPConnection("127.0.0.1", server_port)
            proxied = http.client.HTTPConnection("127.0.0.1", proxy_port)
            for label, method, path, body in REQUESTS:
                for _ in range(args.warmup):
                    timed(direct, method, path, body)
                    timed(proxied, method, path, body)
                straight: list[float] = []
                through: list[float] = []
                for _ in range(args.samples):
                    straight.append(timed(direct, method, path, body))
                    through.append(timed(proxied, method, path, body))
                added_median = statistics.median(through) - statistics.median(straight)
                added_p99 = p99(through) - p99(straight)
                print(f"{label} ({args.samples} each, ms)")
                print(row("direct", straight))
                print(row("proxied", through))
                print(f"  added: median {added_median:+.2f}, p99 {added_p99:+.2f}")
        finally:
            stop(proxy)
            stop(server)
        lines = (Path(tmp) / "rec" / "exchanges.jsonl").read_text().count("\n")
        print(f"recording: {lines} lines")


if __name__ == "__main__":
    main()
