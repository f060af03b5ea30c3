"""`POST /payments` against Prism mocking the same OpenAPI document, side by side in one run.

    python bench/prism_ratio.py --prism PATH [--tree DIR] [--rounds 5] [--seconds 5]

Prism (Stoplight's mock server, `npm install @stoplight/prism-cli` in any folder: PATH is its
`node_modules/.bin/prism`) answers from the document alone, with no state: the reference the
issue sets, `payorch serve` at 2.0x its throughput. Both serve the document `payorch` serves
(`GET /api/v1/openapi.json`, written to a temporary file), on 127.0.0.1; Prism with
`--verboseLevel error` (its per-request log off, so it is not slowed by its own logging), the
simulator with no rate limit and a fresh data dir. Prism ignores the document's relative server
URL, so it is sent `/payments` where payorch gets `/api/v1/payments`; the body and key are the
same (sandbox, SPEI). wrk at 32 connections, the two in alternating rounds, each round's median
reported with the server's CPU seconds per request (from /proc, user + system), which moves much
less than throughput on a shared machine. `--tree` serves another source tree (PYTHONPATH).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from _common import BODY, ENV, SK, cpu_s, serve_cmd, start, stop
from http_load import POST_LUA, ensure_wrk, wrk


def start_prism(binary: str, document: Path, port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [binary, "mock", str(document), "-h", "127.0.0.1", "-p", str(port), "-v", "error"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/payments",
                data=json.dumps(BODY).encode(),
                headers={"Authorization": f"Bearer {SK}", "Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=2) as answer:
                if answer.status == 200:
                    return proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError("Prism did not start")


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prism", required=True, help="the prism binary (node_modules/.bin/prism)")
    parser.add_argument("--tree", type=Path, help="serve this source tree instead")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=5)
    args = parser.parse_args()
    if args.tree is not None:
        ENV["PYTHONPATH"] = str(args.tree.resolve())
    binary = ensure_wrk()
    script = POST_LUA % (json.dumps(BODY), SK)
    with tempfile.TemporaryDirectory() as tmp:
        ours, port, _ = start(serve_cmd(Path(tmp) / "data"))
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/openapi.json") as answer:
            document = Path(tmp) / "openapi.json"
            document.write_bytes(answer.read())
        prism_port = free_port()
        prism = start_prism(args.prism, document, prism_port)
        targets = {
            "payorch": (ours, f"http://127.0.0.1:{port}/api/v1/payments"),
            "prism": (prism, f"http://127.0.0.1:{prism_port}/payments"),
        }
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in targets}
        try:
            for _proc, url in targets.values():
                wrk(binary, url, script, 2)  # warm-up
            for _ in range(args.rounds):
                for name, (proc, url) in targets.items():
                    before = cpu_s(proc.pid)
                    rps, _ = wrk(binary, url, script, args.seconds)
                    used = cpu_s(proc.pid) - before
                    results[name].append((rps, used / (rps * args.seconds) * 1e6))
        finally:
            stop(ours)
            prism.terminate()
            prism.wait(10)
    medians = {
        name: (statistics.median(r for r, _ in rows), statistics.median(c for _, c in rows))
        for name, rows in results.items()
    }
    print(
        f"POST /payments, wrk 32 connections, {args.rounds} alternating rounds of {args.seconds} s"
    )
    print(f"{'server':<8} {'req/s (median)':>15} {'rounds':>32} {'CPU us/request':>15}")
    for name, rows in results.items():
        spread = " ".join(f"{r:,.0f}" for r, _ in rows)
        print(f"{name:<8} {medians[name][0]:>15,.0f} {spread:>32} {medians[name][1]:>15.0f}")
    ratio = medians["payorch"][0] / medians["prism"][0]
    cpu_ratio = medians["prism"][1] / medians["payorch"][1]
    print(f"payorch / prism: {ratio:.2f}x throughput, {cpu_ratio:.2f}x less CPU per request")
    per_round = [a / b for (a, _), (b, _) in zip(results["payorch"], results["prism"], strict=True)]
    print("per round: " + " ".join(f"{r:.2f}" for r in per_round))


if __name__ == "__main__":
    main()
