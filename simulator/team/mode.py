"""Team mode's parts, opened once per server: the owners and tokens, the audit trail."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from simulator.settings import Settings
from simulator.team.audit import AuditLog, iso_ms
from simulator.team.ledger import NamespaceLedger
from simulator.team.tokens import Caller, Team, read_or_make_admin_token

TEAM_DIR = "team"

# The control calls that change a world (audited in team mode), by path: every non-GET under
# /_sim/ but those the management handlers audit themselves, and a webhook secret's rotation.
SELF_AUDITED = ("/_sim/namespaces", "/_sim/team/", "/_sim/audit")


def audited_control(method: str, path: str) -> bool:
    if method in ("GET", "HEAD", "OPTIONS"):
        return False
    if path.startswith("/api/v1/_sim/"):  # the control plane's alias under the API's base
        path = path[len("/api/v1") :]
    if path.startswith("/_sim/"):
        return not path.startswith(SELF_AUDITED)
    return path.startswith("/api/v1/webhooks/") and path.endswith("/rotate-secret")


@dataclass(slots=True)
class TeamMode:
    team: Team
    audit: AuditLog
    wall: Callable[[], float]
    # Behind --workers: the server's namespaces counted across workers (None: one process,
    # whose own namespaces are the server's).
    ledger: NamespaceLedger | None = None

    def record(
        self,
        caller: Caller | None,
        action: str,
        namespace: str | None,
        status: int,
        request_id: str | None,
        *,
        owner: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        """One audit entry, on disk when this returns."""
        entry: dict[str, Any] = {
            "at": iso_ms(self.wall()),
            "who": caller.view() if caller is not None else None,
            "action": action,
            "namespace": namespace,
            # Whose namespace it is (an owner reads the trail of its own namespaces).
            "owner": owner if owner is not None else (caller.owner if caller else None),
            "status": status,
            "outcome": "ok" if status < 400 else "refused",
            "requestId": request_id,
        }
        if details:
            entry["details"] = details
        self.audit.append(entry)


def open_team(settings: Settings) -> TeamMode | None:
    """Team mode's parts for `settings` (None outside team mode)."""
    if not settings.team:
        return None
    directory = settings.team_dir or (settings.data_dir / TEAM_DIR if settings.data_dir else None)
    admin = settings.admin_token
    if admin is None:
        if directory is None:
            raise ValueError("team mode without a data dir needs an admin token")
        admin, _ = read_or_make_admin_token(directory)
    wall: Callable[[], float] = lambda: time.time()  # noqa: E731  # looked up per call (freezegun)
    team = Team(directory, admin, default_quota=settings.namespaces_per_owner, wall=wall)
    ledger = NamespaceLedger(settings.team_dir, fsync=settings.fsync) if settings.team_dir else None
    return TeamMode(team, AuditLog(directory, fsync=settings.fsync), wall, ledger)
