"""The answers of a seeded run over every operation, in two source trees, compared byte for byte.

    python bench/seeded_answers.py OLD NEW [--repeat 3] [--show]

Each tree serves in process (the tree first on sys.path, a fresh data dir, the same seed, the
scheduler's tick off), makes the targets of bench/operations.py (payments, paid ones, a deposit
account) and sends every operation `--repeat` times, in order. What legitimately differs between
two runs is masked, as tests/api/test_seeded_ids.py does: timestamps (real time passes), the
server's origin, an error's request id (drawn from the OS, seeded or not), the clock's offset,
and an access token's signature and times (an HMAC under the data dir's own secret). Every
other byte of every answer, the status and the body, must be the same; the script prints the
operations whose answers differ (the first difference of each) and exits 1 if any does.
`--show` prints each operation's status, to check that every one is answered with a 2xx.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

SEED = 20261128
ISO = re.compile(rb'"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)"')


def masked(raw: bytes, origin: str) -> Any:
    raw = ISO.sub(b'"<time>"', raw.replace(origin.encode(), b"<origin>"))
    try:
        value = json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")

    def walk(item: Any) -> Any:
        if isinstance(item, dict):
            return {k: MASKS.get(k, walk)(v) for k, v in item.items()}
        if isinstance(item, list):
            return [walk(v) for v in item]
        return item

    return walk(value)


def _token(token: str) -> Any:
    """An access token by its claims, without its signature (the data dir's own secret)."""
    parts = token.split(".")[:2]
    decoded = [json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4))) for p in parts]
    return {"header": decoded[0], "claims": {**decoded[1], "iat": "<time>", "exp": "<time>"}}


MASKS = {
    "accessToken": _token,
    # An error's request id is drawn from the OS's randomness, seed or no seed (as every
    # request's X-Request-Id): not an answer's content.
    "requestId": lambda _: "<request id>",
    "offsetSeconds": lambda _: "<offset>",
}


async def child(tree: str, repeat: int) -> None:
    sys.path.insert(0, tree)
    sys.path.insert(1, str(Path(__file__).parent))
    import http.client

    from aiohttp import web
    from operations import Targets, operations

    from simulator.app import create_app
    from simulator.settings import Settings

    settings = Settings(
        data_dir=Path(tempfile.mkdtemp()), rate_limit=False, port=0, tick_seconds=0, seed=SEED
    )
    runner = web.AppRunner(create_app(settings), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    origin = f"http://127.0.0.1:{port}"

    def call(method: str, path: str, body: Any, key: str) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", port)
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        conn.request(method, path, data, headers)
        answer = conn.getresponse()
        raw = answer.read()
        conn.close()
        return answer.status, raw

    def run() -> list[Any]:
        ops = operations()
        targets = Targets(call, pending=repeat, paid=repeat)
        rows = []
        for op in ops:
            for _ in range(repeat):
                path, body = targets.request(op)
                status, raw = call(op.method, path, body, op.key)
                rows.append([op.name, status, masked(raw, origin)])
        return rows

    rows = await asyncio.to_thread(run)
    print(json.dumps(rows))
    await runner.cleanup()


def answers(tree: Path, repeat: int) -> list[Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(tree), str(repeat)],
        capture_output=True,
        text=True,
        cwd=tree,
    )
    if out.returncode != 0:
        raise SystemExit(f"{tree}: {out.stderr[-2000:]}")
    result: list[Any] = json.loads(out.stdout.splitlines()[-1])
    return result


def first_difference(a: Any, b: Any, where: str = "") -> str:
    if type(a) is not type(b):
        return f"{where or '.'}: {a!r} != {b!r}"
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b or a[key] != b[key]:
                return first_difference(a.get(key), b.get(key), f"{where}.{key}")
    if isinstance(a, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return first_difference(x, y, f"{where}[{i}]")
    return f"{where or '.'}: {str(a)[:200]} != {str(b)[:200]}"


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        asyncio.run(child(sys.argv[2], int(sys.argv[3])))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--show", action="store_true", help="print each operation's status")
    args = parser.parse_args()
    old, new = (answers(tree.resolve(), args.repeat) for tree in (args.old, args.new))
    differ = 0
    for (name, status_a, body_a), (_, status_b, body_b) in zip(old, new, strict=True):
        if args.show:
            print(f"{status_a} {status_b}  {name}")
        if [status_a, body_a] != [status_b, body_b]:
            differ += 1
            print(f"DIFFERS {name}: {first_difference([status_a, body_a], [status_b, body_b])}")
    print(f"{len(old)} answers, {differ} differ")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
