"""POST /payments latency on an empty store and with 20,000 stored transactions.

Starts its own `payorch serve` on a free port with a fresh data dir, and a bare aiohttp endpoint
that parses the same body and answers a same-sized JSON document as the baseline, in the same run.
Sequential requests over one keep-alive connection (http.client); prints min/median/p99/max in ms.

    python bench/payments_create.py [--stored 20000] [--samples 1000]
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import tempfile
import time
from pathlib import Path

from _common import AUTH, BODY, bare_app_cmd, serve_cmd, start, stop

HEADERS = AUTH
PAYLOAD = json.dumps(BODY)

BASELINE_HANDLERS = """
import json
PAYLOAD = json.loads(sys.argv[1])
async def handler(request):
    await request.json()
    return web.json_response(PAYLOAD)
"""


def timed_posts(port: int, count: int) -> list[float]:
    conn = http.client.HTTPConnection("127.0.0.1", port)
    samples = []
    for _ in range(count):
        began = time.perf_counter()
        conn.request("POST", "/api/v1/payments", PAYLOAD, HEADERS)
        response = conn.getresponse()
        response.read()
        samples.append((time.perf_counter() - began) * 1000)
        assert response.status == 200, response.status
    conn.close()
    return samples


def report(label: str, samples: list[float]) -> float:
    ordered = sorted(samples)
    median = statistics.median(ordered)
    p99 = ordered[int(len(ordered) * 0.99) - 1]
    print(
        f"{label:<38} min {ordered[0]:6.2f}  median {median:6.2f}  p99 {p99:6.2f}  "
        f"max {ordered[-1]:7.2f} ms"
    )
    return median


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stored", type=int, default=20_000)
    parser.add_argument("--samples", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server, port, _ = start(serve_cmd(Path(tmp) / "data"))
        try:
            sample_body = None
            conn = http.client.HTTPConnection("127.0.0.1", port)
            conn.request("POST", "/api/v1/payments", PAYLOAD, HEADERS)
            sample_body = conn.getresponse().read().decode()
            conn.close()
            baseline, base_port, _ = start(
                bare_app_cmd(
                    BASELINE_HANDLERS, [("POST", "/api/v1/payments", "handler")], sample_body
                )
            )
            try:
                timed_posts(base_port, 200)
                bare = report(
                    "bare aiohttp endpoint (baseline)", timed_posts(base_port, args.samples)
                )
            finally:
                baseline.terminate()
            timed_posts(port, 200)  # warm-up
            empty = report("POST /payments, ~1 stored", timed_posts(port, args.samples))
            fill = args.stored - args.samples - 201
            began = time.perf_counter()
            timed_posts(port, max(fill, 0))
            print(f"  (stored {args.stored} transactions in {time.perf_counter() - began:.1f} s)")
            full = report(f"POST /payments, {args.stored} stored", timed_posts(port, args.samples))
            print(
                f"ratio full/empty median: {full / empty:.2f}   "
                f"ratio empty/bare median: {empty / bare:.2f}"
            )
        finally:
            stop(server)


if __name__ == "__main__":
    main()
