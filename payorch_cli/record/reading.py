"""What a recording reads from a server: the log's requests to record, each one's bodies, the
events delivered to the credential's subscriptions, and how the recording names its credential.

Shared by `payorch record` and the MCP server's `record_scenario`, which record the same way.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from payorch_cli.record.steps import Identity

if TYPE_CHECKING:
    from payorch_cli.client import Client

PAGE = 100


def log_summaries(
    client: Client, cutoff: datetime | None, last: int | None, include_tools: bool = False
) -> tuple[list[dict[str, Any]], list[str]]:
    """The log's requests to record, oldest first (the log lists newest first), and the ids of
    the events caused by the requests around them that are not recorded (left out with them: to
    the millisecond, an event can look as if it came with a recorded request).

    `last` counts the requests that become steps, from the newest one: left-out requests
    between them (webhook reads, such as a previous recording's own) come along uncounted, and
    those after the newest step are not part of the recording."""
    from payorch_cli.options import include_tools_query
    from payorch_cli.record.build import recordable

    kept: list[dict[str, Any]] = []
    outside: list[str] = []
    counted = 0
    offset = 0
    while True:
        page = client.get(
            "/_sim/requests",
            limit=PAGE,
            offset=offset,
            includeTools=include_tools_query(include_tools),
        )
        rows = page["data"]
        for row in rows:
            becomes_step = recordable(row["method"], row["path"])
            if cutoff is not None and _at(row) < cutoff:
                return kept[::-1], [*outside, *(row.get("eventIds") or ())]
            if last is not None and (counted >= last or (counted == 0 and not becomes_step)):
                outside.extend(row.get("eventIds") or ())
                if becomes_step:
                    return kept[::-1], outside
                continue
            kept.append(row)
            counted += becomes_step
        offset += len(rows)
        if not rows or offset >= page["pagination"]["total"]:
            return kept[::-1], outside


def _at(summary: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(summary["at"].replace("Z", "+00:00"))


def log_detail(client: Client, summary: dict[str, Any]) -> dict[str, Any]:
    """One request of the log with its bodies; one the server cannot serve (or that is not
    JSON Python can read) becomes a comment in the file, not the end of the recording."""
    from payorch_cli.client import ApiError

    try:
        detail: dict[str, Any] = client.get(f"/_sim/requests/{summary['id']}")
    except ApiError as exc:
        if exc.status == 0:  # the server went away: the recording cannot go on
            raise
        return {**summary, "unreadable": f"the server could not serve it ({exc.message})"}
    return detail


def delivered_events(client: Client) -> list[dict[str, Any]]:
    """Every event delivered to one of the credential's subscriptions, once each."""
    events: dict[str, dict[str, Any]] = {}
    hooks = client.list_webhooks()["data"]
    for hook in hooks:
        offset = 0
        while True:
            page = client.get(f"/webhooks/{hook['id']}/deliveries", limit=PAGE, offset=offset)
            for delivery in page["data"]:
                event = delivery.get("event")
                if isinstance(event, dict):
                    events.setdefault(event["id"], event)
            offset += len(page["data"])
            if not page["data"] or offset >= page["pagination"]["total"]:
                break
    return list(events.values())


def identity_of(api_key: str) -> Identity:
    """The recording credential's fixture name (`as:`), its production twin, and the fixture
    secret of each publishable key (to restore `POST /auth/token`'s masked secretKey)."""
    from payorch_cli.scenario.credentials import Credentials

    credentials = Credentials.builtin()
    own = credentials.by_key.get(api_key)
    if own is None or own.environment is None:
        return Identity(None, secret_of=lambda publishable: _secret_of(credentials, publishable))
    owner = own.name.split("/")[0]
    production = f"{owner}/production"
    return Identity(
        owner if own.environment == "sandbox" else own.name,
        production if production in credentials.by_name else None,
        lambda publishable: _secret_of(credentials, publishable),
    )


def _secret_of(credentials: Any, publishable: str) -> str | None:
    found = credentials.by_key.get(publishable)
    if found is None or not found.publishable:
        return None
    secret = credentials.by_name.get(found.name.removesuffix("/publishable"))
    return secret.key if secret is not None else None
