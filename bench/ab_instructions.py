"""Before/after in instructions: what one `POST /payments` costs two source trees, counted.

    python bench/ab_instructions.py OLD NEW [--requests 100] [--bodies spei,failover,sandbox]
                                            [--request-log]
    python bench/ab_instructions.py OLD NEW --operations [--requests 40] [--warm-up 100]
                                            [--only TEXT]
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
writing a prepared request: a few percent of the total, the same in both trees), counted on the
event loop's thread only (`--separate-threads`): the store's compaction thread starts when the
journal reaches a size, so its work (millions of instructions) lands in whichever operation
happens to be counted then, and a tree whose records are a few bytes longer moves it to another
row (it made `POST /payments PIX BR` +15 % and the first row 5.8 M, docs/performance.md).

Bodies: `spei` (production key, SPEI: the cascade's first provider takes it), `failover`
(production key, card method 1004: its first provider is in outage), `sandbox` (sandbox key,
SPEI). Needs Debian's `valgrind`. The counts are reproducible to a few hundred instructions
run after run, whatever the load; a run takes a minute or two per tree and body.

`--operations`: every operation of bench/operations.py (every rail's `POST /payments`, checkout
session, refund, simulate, reads, lists, balance, payouts, deposits, `auth/token`; `--only`
keeps those whose name holds TEXT), one child per tree serving them all in turn: its targets
made first, then per operation `--warm-up` requests and `--requests` counted ones (each counted
stretch zeroed and dumped on its own), instructions per request for each, with B/A. Both trees
run the one operations table (this folder's), so their requests are the same.
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
    port = runner.addresses[0][1]
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


async def serve_operations(tree: str, requests: int, warm_up: int, only: str) -> None:
    """The child of `--operations`: every operation in turn, each counted stretch dumped."""
    sys.path.insert(0, tree)
    import http.client
    import json

    from aiohttp import web
    from operations import Targets, operations, request_bytes

    from simulator.app import create_app
    from simulator.settings import Settings

    options: dict[str, object] = {
        "data_dir": Path(tempfile.mkdtemp()),
        "rate_limit": False,
        "port": 0,
        "tick_seconds": 10**6,
    }
    if "request_log" in inspect.signature(Settings).parameters:
        options["request_log"] = 0
    app = create_app(Settings(**options))  # type: ignore[arg-type]  # either tree's Settings
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]

    def call(method: str, path: str, body: object, key: str) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", port)
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        conn.request(method, path, json.dumps(body) if body is not None else None, headers)
        answer = conn.getresponse()
        raw = answer.read()
        conn.close()
        return answer.status, raw

    ops = [op for op in operations() if only in op.name]
    pools = {
        pool: sum(op.pool == pool for op in ops) * (warm_up + requests)
        for pool in ("pending", "paid")
    }
    targets = await asyncio.to_thread(Targets, call, **pools)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)

    async def one(request: bytes) -> None:
        writer.write(request)
        head = await reader.readuntil(b"\r\n\r\n")
        if head[9:12] not in (b"200", b"201"):
            raise SystemExit(f"{tree}: {head[:200]!r}")
        length = next(
            line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
        )
        await reader.readexactly(int(length.split(b":")[1]))

    for op in ops:
        batch = [request_bytes(op, *targets.request(op)) for _ in range(warm_up + requests)]
        for request in batch[:warm_up]:
            await one(request)
        gc.collect()
        gc.freeze()
        os.getppid()  # callgrind --zero-before=os_getppid
        for request in batch[warm_up:]:
            await one(request)
        os.getpgrp()  # callgrind --dump-before=os_getpgrp
        gc.unfreeze()
    writer.close()
    await runner.cleanup()


def count_operations(
    tree: Path, requests: int, warm_up: int, only: str, out_dir: Path
) -> list[float]:
    """Instructions per request of each operation (in the table's order) in `tree`."""
    prefix = out_dir / f"{tree.name or 'tree'}-{abs(hash(str(tree)))}-ops"
    subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--separate-threads=yes",
            "--zero-before=os_getppid",
            "--dump-before=os_getpgrp",
            f"--callgrind-out-file={prefix}.%p",
            sys.executable,
            __file__,
            "--child-operations",
            str(tree),
            str(requests),
            str(warm_up),
            only,
        ],
        check=True,
        capture_output=True,
        cwd=tree,
    )
    figures = []
    dumps = out_dir.glob(f"{prefix.name}.*.*-01")  # each counted stretch, the loop's thread
    for dump in sorted(dumps, key=lambda path: int(path.name.rsplit(".", 1)[1][: -len("-01")])):
        for line in dump.read_text().splitlines():
            if line.startswith("summary:"):
                figures.append(int(line.split()[1]) / requests)
    return figures


def main_operations(args: argparse.Namespace) -> None:
    from operations import operations

    names = [op.name for op in operations() if args.only in op.name]
    trees = (args.old.resolve(), args.new.resolve())
    with tempfile.TemporaryDirectory() as out, ThreadPoolExecutor(2) as pool:
        futures = [
            pool.submit(count_operations, t, args.requests, args.warm_up, args.only, Path(out))
            for t in trees
        ]
        a_counts, b_counts = (future.result() for future in futures)
    print(
        f"instructions per request ({args.requests} counted after {args.warm_up} of the same;"
        f" A {args.old}, B {args.new})"
    )
    width = max(len(name) for name in names)
    print(f"{'operation':<{width}} {'A':>12} {'B':>12} {'B/A':>7}")
    for name, a, b in zip(names, a_counts, b_counts, strict=True):
        print(f"{name:<{width}} {a:>12,.0f} {b:>12,.0f} {b / a:>7.3f}")


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
            "--separate-threads=yes",
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
    [dump] = out_dir.glob(f"{prefix.name}.*.1-01")  # the counted stretch, the loop's thread
    for line in dump.read_text().splitlines():
        if line.startswith("summary:"):
            return int(line.split()[1]) / requests
    raise SystemExit(f"no summary in {dump}")


def main() -> None:
    if sys.argv[1:2] == ["--child-operations"]:
        tree, requests, warm_up, only = sys.argv[2:6]
        asyncio.run(serve_operations(tree, int(requests), int(warm_up), only))
        return
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
    parser.add_argument("--operations", action="store_true", help="every operation, in turn")
    parser.add_argument("--warm-up", type=int, default=100, help="per operation (--operations)")
    parser.add_argument("--only", default="", help="operations whose name holds this")
    parser.add_argument("--team-b", action="store_true", help="serve B in team mode")
    args = parser.parse_args()
    if args.operations:
        main_operations(args)
        return
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
