"""A worker's siblings, asked for their namespaces (GET /_sim/namespaces through the proxy).

The proxy sends a listing by `default`'s credential to `default`'s worker, which knows only its
own namespaces; it asks every sibling (`Settings.peers`, the addresses `payorch serve --workers`
or a deployment gives it) for theirs and answers the union. It asks with a sandbox secret key
of `default`, which every worker has (the same fixtures), and marks the request with
`PEER_HEADER` so that the sibling answers from its own namespaces only. The proxy clears that
header from clients' requests. A sibling that does not answer makes the listing 503: a list
without one worker's namespaces would look complete and be wrong.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import aiohttp

from simulator.domain.catalog import Catalog
from simulator.domain.errors import ApiError
from simulator.domain.namespaces import DEFAULT

PEER_HEADER = "X-Payorch-Peer"
TIMEOUT_SECONDS = 5.0
RETRY_AFTER_SECONDS = 1


async def siblings_namespaces(
    peers: Sequence[str], catalog: Catalog | None = None, *, authorization: str = ""
) -> list[dict[str, Any]]:
    """Every namespace the siblings hold but `default` (the caller's own), unsorted: asked with
    `default`'s key from `catalog`, or (team mode) with the caller's own `authorization`, so
    that each sibling answers what that caller may see."""
    if catalog is not None:
        key = next(c.secret for c in catalog.credentials if c.environment == "sandbox")
        authorization = f"Bearer {key}"
    headers = {"Authorization": authorization, PEER_HEADER: "1"}
    timeout = aiohttp.ClientTimeout(total=TIMEOUT_SECONDS)
    async with aiohttp.ClientSession(timeout=timeout, headers=headers) as session:
        lists = await asyncio.gather(*(_ask(session, peer) for peer in peers))
    return [row for rows in lists for row in rows if row.get("name") != DEFAULT]


async def _ask(session: aiohttp.ClientSession, peer: str) -> list[dict[str, Any]]:
    try:
        async with session.get(f"{peer}/_sim/namespaces") as response:
            if response.status == 200:
                data: list[dict[str, Any]] = (await response.json())["data"]
                return data
    except (TimeoutError, aiohttp.ClientError, ValueError, KeyError):
        pass
    raise ApiError(
        "service_unavailable",
        "A worker of this server is not answering (restarting?); the list of namespaces "
        "would miss its namespaces. Retry shortly.",
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )


def merged(own: list[dict[str, Any]], siblings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`default` first, then by name (as one server lists them). A name seen twice is kept once:
    a deployment may give every worker the same list of peers, itself included."""
    rows = {row["name"]: row for row in reversed(own + siblings)}
    return sorted(rows.values(), key=lambda row: (row["name"] != DEFAULT, row["name"]))
