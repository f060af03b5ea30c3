"""`payorch serve`'s team mode and namespace bounds (issue 34; issue 31 item 5): the options
turned into settings, the refusal of a shared host in local mode, the admin token."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from simulator.settings import MAX_NAMESPACES, NAMESPACE_CREATIONS_PER_MINUTE, NAMESPACES_PER_OWNER


@dataclass(frozen=True, slots=True)
class Bounds:
    """The namespace bounds of `serve`'s options (issue 31 item 5; quotas of team mode)."""

    max_namespaces: int = MAX_NAMESPACES
    creations_per_minute: int = NAMESPACE_CREATIONS_PER_MINUTE
    per_owner: int = NAMESPACES_PER_OWNER
    rps: str = "0"  # per namespace: --namespace-rps as given (N, sandbox or 0)
    storage: tuple[int, int] = (0, 0)  # per namespace: objects, bytes on disk

    def __post_init__(self) -> None:
        rate(self.rps)  # a bad one is refused before anything starts

    def settings(self) -> dict[str, Any]:
        per_second, burst = rate(self.rps) or (0.0, 0)
        return {
            "max_namespaces": self.max_namespaces,
            "namespace_creations_per_minute": self.creations_per_minute,
            "namespaces_per_owner": self.per_owner,
            "namespace_rps": per_second,
            "namespace_burst": burst,
            "namespace_max_objects": self.storage[0],
            "namespace_max_bytes": self.storage[1],
        }

    def options(self) -> list[str]:
        """The same bounds as every worker of `--workers N` is given them."""
        return [
            f"--max-namespaces={self.max_namespaces}",
            f"--namespace-creations-per-minute={self.creations_per_minute}",
            f"--namespaces-per-owner={self.per_owner}",
            f"--namespace-rps={self.rps}",
            f"--namespace-max-objects={self.storage[0]}",
            f"--namespace-max-bytes={self.storage[1]}",
        ]


def rate(value: str) -> tuple[float, int] | None:
    from simulator.team.limits import namespace_rate

    try:
        return namespace_rate(value)
    except ValueError:
        typer.echo(
            f"payorch serve: --namespace-rps {value!r}: a number of requests per second (0: "
            "no limit) or `sandbox`",
            err=True,
        )
        raise typer.Exit(2) from None


def loopback(host: str) -> bool:
    import ipaddress

    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name: it may resolve to anything


def refuse_shared(host: str, *, team: bool, insecure_shared: bool) -> bool:
    """Whether the server is reachable from elsewhere; exit 2 if so in local mode unasked."""
    if loopback(host):
        return False
    if not team and not insecure_shared:
        typer.echo(
            f"payorch serve: --host {host} is reachable from other machines, where the public "
            "fixture keys would manage every namespace: add --team (owner and admin tokens) or "
            "--insecure-shared (local mode's rules, knowingly)",
            err=True,
        )
        raise typer.Exit(2)
    return True


def admin_token(data_dir: Path, given: Path | None) -> str:
    """The admin token of --team: the file's, else the data dir's (made and printed once)."""
    from simulator.team.mode import TEAM_DIR
    from simulator.team.tokens import check_admin_token, read_or_make_admin_token

    try:
        if given is not None:
            return check_admin_token(given.read_text().strip())
        token, made = read_or_make_admin_token(data_dir / TEAM_DIR)
    except (OSError, ValueError) as exc:
        where = given if given is not None else data_dir / TEAM_DIR
        typer.echo(f"payorch serve: bad admin token ({where}): {exc}", err=True)
        raise typer.Exit(2) from None
    if made:
        typer.echo(
            f"payorch serve: team mode's admin token (printed this once; kept in "
            f"{data_dir / TEAM_DIR / 'admin-token'}, mode 0600): {token}",
            err=True,
        )
    return token


def team_worker_options(data_dir: Path, given: Path | None) -> list[str]:
    """What makes each worker of `--team --workers N` one part of one team server: team mode,
    the admin token's file (made and printed here, once, never by a worker) and the team
    directory they share (owners, tokens, audit trail, the namespace ledger)."""
    from simulator.team.mode import TEAM_DIR
    from simulator.team.tokens import ADMIN_TOKEN_FILE

    admin_token(data_dir, given)
    token_file = given if given is not None else data_dir / TEAM_DIR / ADMIN_TOKEN_FILE
    return [
        "--team",
        f"--admin-token-file={token_file.resolve()}",
        f"--team-dir={(data_dir / TEAM_DIR).resolve()}",
    ]
