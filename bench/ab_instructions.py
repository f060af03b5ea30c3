"""Before/after in instructions: what one `POST /payments` costs two source trees, counted.

    python bench/ab_instructions.py OLD NEW [--requests 100] [--bodies spei,failover,sandbox]
                                            [--request-log] [--team-b]

Throughput and CPU time swing with whatever else the machine runs (`ab_trees.py` alternates
rounds to spread that drift, and still moves by several points); a count of the instructions a
request executes does not. Each tree serves in process (the tree first on sys.path, a fresh data
dir, no rate limit, no request log where the tree has one unless `--request-log` (on, as `payorch
serve` has it), the scheduler's tick off so no job runs in between), takes 300 warm-up requests
over one keep-alive connection, freezes the GC as
`payorch serve` does after start-up, and then makes `--requests` more under Valgrind's callgrind,
which counts only those (`--zero-before` / `--dump-before` on two system calls nothing else in
the process makes). The figure is instructions per request, client side included (a raw socket
writing a prepared request: a few percent of the total, the same in both trees).

Bodies: `spei` (production key, SPEI: the cascade's first provider takes it), `failover`
(production key, card method 1004: its first provider is in outage), `sandbox` (sandbox key,
SPEI). `--team-b` serves B as `payorch serve --team` does (OLD and NEW may then be the same
tree: the cost of team mode's checks). Needs Debian's `valgrind`. The counts are reproducible
to a few hundred instructions run after run, whatever the load; a run takes a minute or two
per tree and body.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import inspect
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _common import LIVE_SK
from _common import SK as SANDBOX_SK

BODIES = {
    "spei": (LIVE_SK, b'{"amount": 50, "paymentMethodId": "1001", "userEmail": "b@example.com"}'),
    "failover": (LIVE_SK, b'{"amount": 50, "paymentMethodId": "1004"}'),
    "sandbox": (
        SANDBOX_SK,
        b'{"amount": 50, "paymentMethodId": "1001", "userEmail": "b@example.com"}',
    ),
}
WARM_UP = 300


def request_bytes(key: str, body: bytes) -> bytes:
    return (
        b"POST /api/v1/payments HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
        + key.encode()
        + b"\r\nContent-Type: application/json\r\nContent-Length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
        + body
    )


async def serve_and_count(
    tree: str, body_name: str, requests: int, request_log: bool, team: bool = False
) -> None:
    """The child: serve the tree in process and make the requests callgrind counts."""
    sys.path.insert(0, tree)
    from aiohttp import web

    from simulator.app import create_app
    from simulator.settings import Settings

    options: dict[str, object] = {
        "data_dir": Path(tempfile.mkdtemp()),
        "rate_limit": False,
        "port": 0,
        "tick_seconds": 10**6,
    }
    if not request_log and "request_log" in inspect.signature(Settings).parameters:
        options["request_log"] = 0
    if team:
        options.update(team=True, admin_token="pat_" + "b" * 40)
    app = create_app(Settings(**options))  # type: ignore[arg-type]  # either tree's Settings
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]  # asyncio.Server
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = request_bytes(*BODIES[body_name])

    async def one() -> None:
        writer.write(request)
        head = await reader.readuntil(b"\r\n\r\n")
        if head[9:12] not in (b"200", b"201"):
            raise SystemExit(f"{tree}: {head[:200]!r}")
        length = next(
            line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
        )
        await reader.readexactly(int(length.split(b":")[1]))

    for _ in range(WARM_UP):
        await one()
    gc.collect()
    gc.freeze()
    os.getppid()  # callgrind --zero-before=os_getppid
    for _ in range(requests):
        await one()
    os.getpgrp()  # callgrind --dump-before=os_getpgrp
    writer.close()
    await runner.cleanup()


def count(
    tree: Path, body_name: str, requests: int, out_dir: Path, request_log: bool, team: bool = False
) -> float:
    """Instructions per request of `tree` for one body, from a callgrind run of the child."""
    mode = "-team" if team else ""
    prefix = out_dir / f"{tree.name or 'tree'}-{abs(hash(str(tree)))}-{body_name}{mode}"
    subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--zero-before=os_getppid",
            "--dump-before=os_getpgrp",
            f"--callgrind-out-file={prefix}.%p",
            sys.executable,
            __file__,
            "--child",
            str(tree),
            body_name,
            str(requests),
            *(["--request-log"] if request_log else []),
            *(["--team"] if team else []),
        ],
        check=True,
        capture_output=True,
        cwd=tree,
    )
    [dump] = out_dir.glob(f"{prefix.name}.*.1")
    for line in dump.read_text().splitlines():
        if line.startswith("summary:"):
            return int(line.split()[1]) / requests
    raise SystemExit(f"no summary in {dump}")


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        asyncio.run(
            serve_and_count(
                sys.argv[2],
                sys.argv[3],
                int(sys.argv[4]),
                "--request-log" in sys.argv,
                "--team" in sys.argv,
            )
        )
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--bodies", default="spei,failover,sandbox")
    parser.add_argument("--request-log", action="store_true", help="serve with the request log on")
    parser.add_argument("--team-b", action="store_true", help="serve B in team mode")
    args = parser.parse_args()
    bodies = args.bodies.split(",")
    trees = (args.old.resolve(), args.new.resolve())
    with tempfile.TemporaryDirectory() as out, ThreadPoolExecutor(2) as pool:
        futures = {
            (i, body): pool.submit(
                count,
                tree,
                body,
                args.requests,
                Path(out),
                args.request_log,
                args.team_b and i == 1,
            )
            for body in bodies
            for i, tree in enumerate(trees)
        }
        print(f"instructions per POST /payments ({args.requests} counted after {WARM_UP})")
        print(f"{'body':<10} {'A':>12} {'B':>12} {'B/A':>7}")
        for body in bodies:
            a, b = (futures[i, body].result() for i in range(2))
            print(f"{body:<10} {a:>12,.0f} {b:>12,.0f} {b / a:>7.3f}")


if __name__ == "__main__":
    main()
