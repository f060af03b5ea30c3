"""Team mode across `kill -9` (issue 34): a real `payorch serve --team`, killed at a random
instant while owners create and delete namespaces (quota accounting) and call the control plane
(audit appends), then restarted on its data dir. After each round:

- no acknowledged action is lost: every 201 namespace exists, every 204 is gone, and each
  acknowledged call (by its request id) has its audit entry;
- the owner's count never passes its quota, however many creations were cut short.

Rounds: 3, or PAYORCH_TEAM_CRASH_ROUNDS; the kill instants from PAYORCH_TEAM_CRASH_SEED."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
from pathlib import Path
from typing import Any

import aiohttp

from tests.cli.test_serve import PAYORCH

ROUNDS = int(os.environ.get("PAYORCH_TEAM_CRASH_ROUNDS", "3"))
SEED = int(os.environ.get("PAYORCH_TEAM_CRASH_SEED", str(random.randrange(2**32))))
QUOTA = 12
ADMIN = "pat_" + "c3" * 20


def start(data_dir: Path, admin_file: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [
            *PAYORCH,
            "serve",
            "--team",
            "--admin-token-file",
            str(admin_file),
            "--port",
            "0",
            "--data-dir",
            str(data_dir),
            "--no-rate-limit",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("Listening on http://"), line
    return proc, line.split()[-1]


async def call(
    session: aiohttp.ClientSession, method: str, url: str, token: str, body: Any = None
) -> tuple[int, Any, str | None]:
    headers = {"Authorization": f"Bearer {token}"}
    async with session.request(method, url, json=body, headers=headers) as response:
        raw = await response.read()
        data = json.loads(raw) if raw else None
        return response.status, data, response.headers.get("X-Request-Id")


async def one_round(
    url: str, owner: str, rng: random.Random, round_: int, existing: set[str], acked: dict[str, Any]
) -> None:
    """Fire the round's calls; record what was acknowledged before the kill."""
    async with aiohttp.ClientSession() as session:

        async def create(name: str) -> None:
            status, body, rid = await call(session, "PUT", f"{url}/_sim/namespaces/{name}", owner)
            if status == 201:
                acked["created"].add(name)
                key = next(k["secretKey"] for k in body["keys"] if k["environment"] == "sandbox")
                acked["requests"].add(rid)
                status, _, rid = await call(
                    session, "POST", f"{url}/_sim/clock/advance", key, {"seconds": 5}
                )
                if status == 200:
                    acked["requests"].add(rid)
            elif status == 403:
                acked["requests"].add(rid)

        async def delete(name: str) -> None:
            status, _, rid = await call(session, "DELETE", f"{url}/_sim/namespaces/{name}", owner)
            if status == 204:
                acked["deleted"].add(name)
                acked["requests"].add(rid)

        jobs = [create(f"r{round_}-{i}") for i in range(QUOTA)]
        jobs += [delete(name) for name in sorted(existing)[: len(existing) // 2]]
        rng.shuffle(jobs)
        await asyncio.gather(*jobs, return_exceptions=True)


async def fire_and_kill(work: Any, pid: int, after: float) -> None:
    running = asyncio.ensure_future(work)
    await asyncio.sleep(after)
    os.kill(pid, signal.SIGKILL)
    await asyncio.gather(running, return_exceptions=True)


async def check(url: str, acked: dict[str, Any], figures: dict[str, int]) -> set[str]:
    async with aiohttp.ClientSession() as session:
        _, listed, _ = await call(session, "GET", f"{url}/_sim/namespaces", ADMIN)
        _, trail, _ = await call(session, "GET", f"{url}/_sim/audit?limit=100000", ADMIN)
    names = {n["name"] for n in listed["data"]} - {"default"}
    logged = {e["requestId"] for e in trail["data"]}
    assert acked["created"] - acked["deleted"] <= names, "an acknowledged creation lost"
    assert not (acked["deleted"] & names), "an acknowledged deletion undone"
    missing = acked["requests"] - logged
    assert not missing, f"acknowledged, not audited: {missing}"
    assert len(names) <= QUOTA, f"{len(names)} namespaces, quota {QUOTA}"
    figures["max_count"] = max(figures["max_count"], len(names))
    figures["acknowledged"] += len(acked["requests"])
    return names


def test_kill_9_loses_no_acknowledged_action_and_never_passes_the_quota(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    data_dir = tmp_path / "data"
    admin_file = tmp_path / "admin"
    admin_file.write_text(ADMIN)
    proc, url = start(data_dir, admin_file)

    async def token() -> str:
        async with aiohttp.ClientSession() as session:
            status, body, _ = await call(
                session,
                "POST",
                f"{url}/_sim/team/tokens",
                ADMIN,
                {"owner": "alice", "maxNamespaces": QUOTA},
            )
            assert status == 201, body
            return str(body["token"])

    owner = asyncio.run(token())
    existing: set[str] = set()
    figures = {"kills": 0, "acknowledged": 0, "max_count": 0}
    for round_ in range(ROUNDS):
        acked: dict[str, Any] = {"created": set(), "deleted": set(), "requests": set()}
        work = one_round(url, owner, rng, round_, existing, acked)
        asyncio.run(fire_and_kill(work, proc.pid, rng.uniform(0.03, 0.4)))
        figures["kills"] += 1
        proc.wait(timeout=10)
        proc, url = start(data_dir, admin_file)
        existing = asyncio.run(check(url, acked, figures))
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=15)
    print(f"\nteam crash: seed {SEED}, {figures}")
