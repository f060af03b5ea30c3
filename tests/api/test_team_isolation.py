"""Issue 34's isolation test: many owners, each with many namespaces, working at once; nothing
one owner does is visible to another (reads, writes, deletions, audit entries).

Full size (50 owners x 20 namespaces) with PAYORCH_TEAM_SCALE=1; the suite runs 0.2 of each
side (10 owners x 4). The figures are printed (run with -s)."""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulator.app import create_app
from tests.api.test_namespaces import Space
from tests.api.test_team import ADMIN, make, team_settings, token
from tests.conftest import Api

SCALE = float(os.environ.get("PAYORCH_TEAM_SCALE", "0.2"))
OWNERS = max(2, round(50 * SCALE))
PER_OWNER = max(2, round(20 * SCALE))


@dataclass
class Figures:
    created: int = 0
    payments: int = 0
    cross_attempts: int = 0  # another owner's namespace: shown, deleted, created over
    cross_visible: int = 0  # ...that answered anything but 404 / 409
    deleted: int = 0
    leaks: list[str] = field(default_factory=list)


async def owner_work(api: Api, owner: str, others: list[str], figures: Figures) -> set[str]:
    me = await token(api, owner, kind="ci")
    spaces: list[Space] = []
    for i in range(PER_OWNER):
        spaces.append(await make(api, f"{owner}-{i}", me))
        figures.created += 1
    for space in spaces:
        body = {"amount": 50, "paymentMethodId": "1001", "merchantOrderId": space.name}
        status, data, _ = await api.post("/payments", space.sk, json=body)
        assert status == 200, data
        figures.payments += 1
        assert (await api.post("/_sim/clock/advance", space.sk, json={"seconds": 60}))[0] == 200
    for other in others:
        for method in ("GET", "DELETE", "PUT"):
            status, _, _ = await api.call(method, f"/_sim/namespaces/{other}-0", me)
            figures.cross_attempts += 1
            if status not in (404, 409):
                figures.cross_visible += 1
    for space in spaces[::2]:  # half deleted
        status, _, _ = await api.call("DELETE", f"/_sim/namespaces/{space.name}", me)
        assert status == 204
        figures.deleted += 1
    kept = {s.name for s in spaces[1::2]}
    for space in spaces[1::2]:
        status, data, _ = await api.get("/payments?limit=100", space.sk)
        assert status == 200, data
        orders = {p.get("merchantOrderId") for p in data.get("data", data.get("items", []))}
        if orders != {space.name}:
            figures.leaks.append(f"{space.name} lists {orders}")
    _, listed, _ = await api.get("/_sim/namespaces", me)
    names = {n["name"] for n in listed["data"]}
    if names != kept:
        figures.leaks.append(f"{owner} lists {sorted(names ^ kept)} wrongly")
    _, trail, _ = await api.get("/_sim/audit?limit=100000", me)
    # Its own actions (its refused tries on others' names included) and calls in its own
    # namespaces: nothing another owner did.
    for entry in trail["data"]:
        if entry["owner"] != owner or entry["who"]["owner"] != owner:
            figures.leaks.append(f"{owner} reads {entry}")
    return kept


async def test_owners_at_once_see_nothing_of_each_other(
    aiohttp_client: Any, tmp_path: Path
) -> None:
    settings = team_settings(tmp_path, namespace_creations_per_minute=100_000)
    api = Api(await aiohttp_client(create_app(settings)))
    owners = [f"owner{i}" for i in range(OWNERS)]
    figures = Figures()
    started = time.perf_counter()
    kept = await asyncio.gather(
        *(owner_work(api, o, [x for x in owners if x != o][:3], figures) for o in owners)
    )
    elapsed = time.perf_counter() - started
    assert figures.leaks == [] and figures.cross_visible == 0
    assert figures.created == OWNERS * PER_OWNER
    _, listed, _ = await api.get("/_sim/namespaces", ADMIN)
    assert {n["name"] for n in listed["data"]} == {"default"}.union(*kept)
    _, trail, _ = await api.get("/_sim/audit?limit=1000000", ADMIN)
    actions = [e["action"] for e in trail["data"]]
    assert actions.count("namespace.create") >= figures.created
    assert actions.count("POST /_sim/clock/advance") == figures.created
    print(
        f"\nteam isolation: {OWNERS} owners x {PER_OWNER} namespaces, {figures.created} created, "
        f"{figures.payments} payments, {figures.deleted} deleted, {figures.cross_attempts} "
        f"cross-owner attempts, {figures.cross_visible} visible, {len(figures.leaks)} leaks, "
        f"{len(trail['data'])} audit entries, {elapsed:.1f} s"
    )
