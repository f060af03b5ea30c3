"""The team server's credentials: the admin token, owners with their quotas, owner tokens.

An owner token is `pot_` + 40 hex digits, the admin token `pat_` + 40 (or what the admin token
file holds). Neither contains `ns_`, so the routing rule (simulator/domain/namespaces.py) sends
them to `default`'s front, where the management routes read them. Only a token's SHA-256 is
kept; the owners and tokens are one JSON file, replaced whole by atomic rename (fsynced) on each
change, so a crash leaves the old state or the new one.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import hmac
import os
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

from simulator.domain.errors import ApiError
from simulator.domain.namespaces import NAME_RULE, valid_name
from simulator.jsonio import dumps, loads

ADMIN_PREFIX = "pat_"
OWNER_PREFIX = "pot_"
KINDS = ("person", "ci", "agent")
STATE_FILE = "state.json"
STATE_LOCK = "state.lock"
ADMIN_TOKEN_FILE = "admin-token"
MAX_LABEL = 80


@dataclass(frozen=True, slots=True)
class Caller:
    """Who makes a management call: the admin, an owner (by one of its tokens), or a namespace's
    own key (`namespace` set; `owner` is then that namespace's owner, if any)."""

    owner: str | None
    kind: str  # admin, person, ci, agent, key
    label: str
    token_id: str | None = None
    namespace: str | None = None

    @property
    def admin(self) -> bool:
        return self.kind == "admin"

    def view(self) -> dict[str, Any]:
        return {"owner": self.owner, "kind": self.kind, "label": self.label}


ADMIN = Caller(None, "admin", "admin")


def team_token_of(header: str | None) -> str | None:
    """The team token an `Authorization` header carries; None for any other credential."""
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token.startswith((ADMIN_PREFIX, OWNER_PREFIX)):
        return None
    return token


def new_admin_token() -> str:
    return ADMIN_PREFIX + secrets.token_hex(20)


def check_admin_token(token: str) -> str:
    """`token` if it may be an admin token (read from --admin-token-file), else ValueError."""
    if not token.startswith(ADMIN_PREFIX) or len(token) < len(ADMIN_PREFIX) + 16:
        raise ValueError(f"an admin token starts with {ADMIN_PREFIX} and has 16 characters more")
    if any(not (c.isascii() and (c.isalnum() or c in "-_")) for c in token):
        raise ValueError("an admin token has letters, digits, '-' and '_' only")
    return token


def read_or_make_admin_token(directory: Path) -> tuple[str, bool]:
    """The data dir's admin token, made on first use (mode 0600); (token, made now)."""
    path = directory / ADMIN_TOKEN_FILE
    try:
        return check_admin_token(path.read_text().strip()), False
    except FileNotFoundError:
        pass
    directory.mkdir(parents=True, exist_ok=True)
    token = new_admin_token()
    temporary = path.with_suffix(".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as file:
        file.write(token + "\n")
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)
    return token, True


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _invalid(why: str) -> ApiError:
    return ApiError("invalid_team_token", f"The team token is {why}.")


_Change = TypeVar("_Change", bound=Callable[..., dict[str, Any]])


def _exclusive(change: _Change) -> _Change:
    """A change of the team state made under an exclusive `flock` of the state's lock file, on
    the state as it is on disk now: behind --workers another worker may have written it."""

    @functools.wraps(change)
    def held(team: Team, *args: Any, **kwargs: Any) -> dict[str, Any]:
        with team._locked():
            team._refresh()
            return change(team, *args, **kwargs)

    return cast(_Change, held)


class Team:
    """Owners, their quotas and tokens; the admin token. Durable in `directory` (None: memory)."""

    def __init__(
        self,
        directory: Path | None,
        admin_token: str,
        *,
        default_quota: int,
        wall: Callable[[], float] | None = None,
    ) -> None:
        self._directory = directory
        self._admin = admin_token.encode()
        self.default_quota = default_quota
        self._wall = wall or (lambda: time.time())
        self._owners: dict[str, dict[str, Any]] = {}
        self._tokens: dict[str, dict[str, Any]] = {}  # by id
        self._by_digest: dict[str, str] = {}
        self._stamp: tuple[int, int, int] | None = None  # the state file's, when last read
        self._refresh()

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        if self._directory is None:
            yield
            return
        self._directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._directory / STATE_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing the only descriptor releases the lock

    def _refresh(self) -> None:
        """Read the state file again if another process (a sibling worker behind --workers)
        replaced it: a token issued or revoked there holds here from the next call."""
        if self._directory is None:
            return
        try:
            stat = os.stat(self._directory / STATE_FILE)
        except FileNotFoundError:
            return
        stamp = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        if stamp == self._stamp:
            return
        state = loads((self._directory / STATE_FILE).read_bytes())
        self._owners = state.get("owners", {})
        self._tokens = state.get("tokens", {})
        self._by_digest = {t["digest"]: t["id"] for t in self._tokens.values()}
        self._stamp = stamp

    # -- authentication -----------------------------------------------------------------------

    def authenticate(self, token: str) -> Caller:
        self._refresh()
        if token.startswith(ADMIN_PREFIX):
            if hmac.compare_digest(token.encode(), self._admin):
                return ADMIN
            raise _invalid("not this server's admin token")
        record = self._tokens.get(self._by_digest.get(_digest(token), ""))
        if record is None:
            raise _invalid("unknown (never issued here, or altered)")
        if record["revoked"]:
            raise _invalid(f"revoked ({record['id']})")
        expires = record["expiresAt"]
        if expires is not None and self._wall() >= expires:
            raise _invalid(f"expired ({record['id']})")
        return Caller(record["owner"], record["kind"], record["label"], record["id"])

    # -- owners and tokens ----------------------------------------------------------------------

    @_exclusive
    def create_token(
        self,
        owner: str,
        *,
        label: str | None = None,
        kind: str = "person",
        max_namespaces: int | None = None,
        expires_in: int | None = None,
    ) -> dict[str, Any]:
        """A new owner token (the owner made if new, its quota set if given): its record's view
        with `token`, the only time the token is shown."""
        check_owner_name(owner)
        if kind not in KINDS:
            raise ApiError("invalid_request", f"`kind` is one of {', '.join(KINDS)}.", param="kind")
        label = label if label is not None else f"{owner}-{kind}"
        if not isinstance(label, str) or not 0 < len(label) <= MAX_LABEL:
            raise ApiError(
                "invalid_request", f"`label` is 1 to {MAX_LABEL} characters.", param="label"
            )
        if max_namespaces is not None:
            check_quota(max_namespaces)
        if expires_in is not None and (
            not isinstance(expires_in, int) or isinstance(expires_in, bool) or expires_in < 1
        ):
            raise ApiError(
                "invalid_request",
                "`expiresInSeconds` is a whole number of seconds, at least 1.",
                param="expiresInSeconds",
            )
        token = OWNER_PREFIX + secrets.token_hex(20)
        now = self._wall()
        record = {
            "id": "tok_" + secrets.token_hex(6),
            "owner": owner,
            "label": label,
            "kind": kind,
            "digest": _digest(token),
            "createdAt": now,
            "expiresAt": now + expires_in if expires_in else None,
            "revoked": False,
        }
        owners = dict(self._owners)
        entry = dict(owners.get(owner, {"maxNamespaces": None}))
        if max_namespaces is not None:
            entry["maxNamespaces"] = max_namespaces
        owners[owner] = entry
        tokens: dict[str, dict[str, Any]] = {**self._tokens, str(record["id"]): record}
        self._save(owners, tokens)  # one write: the token and its owner's quota, or neither
        self._by_digest[str(record["digest"])] = str(record["id"])
        return {**self._view(record), "token": token}

    @_exclusive
    def revoke(self, token_id: str) -> dict[str, Any]:
        record = self._tokens.get(token_id)
        if record is None:
            raise ApiError("team_token_not_found", f"No team token {token_id!r}.", param="id")
        if not record["revoked"]:
            tokens = {**self._tokens, token_id: {**record, "revoked": True}}
            self._save(self._owners, tokens)
        return self._view(self._tokens[token_id])

    @_exclusive
    def set_quota(self, owner: str, max_namespaces: Any) -> dict[str, Any]:
        check_quota(max_namespaces)
        if owner not in self._owners:
            raise ApiError(
                "owner_not_found",
                f"No owner {owner!r}: `payorch team token create {owner}` makes one.",
                param="owner",
            )
        owners = {**self._owners, owner: {**self._owners[owner], "maxNamespaces": max_namespaces}}
        self._save(owners, self._tokens)
        return self.owner_view(owner)

    def quota_of(self, owner: str) -> int:
        self._refresh()
        quota = self._owners.get(owner, {}).get("maxNamespaces")
        return self.default_quota if quota is None else int(quota)

    def owner_names(self) -> list[str]:
        self._refresh()
        return sorted(self._owners)

    def owner_view(self, owner: str) -> dict[str, Any]:
        return {"name": owner, "maxNamespaces": self.quota_of(owner)}

    def tokens(self, owner: str | None = None) -> list[dict[str, Any]]:
        self._refresh()
        return [
            self._view(t)
            for t in sorted(self._tokens.values(), key=lambda t: t["createdAt"])
            if owner is None or t["owner"] == owner
        ]

    def _view(self, record: dict[str, Any]) -> dict[str, Any]:
        expires = record["expiresAt"]
        return {
            "id": record["id"],
            "owner": record["owner"],
            "label": record["label"],
            "kind": record["kind"],
            "createdAt": _iso(record["createdAt"]),
            "expiresAt": _iso(expires) if expires is not None else None,
            "revoked": record["revoked"],
        }

    def _save(self, owners: dict[str, Any], tokens: dict[str, Any]) -> None:
        if self._directory is not None:
            self._directory.mkdir(parents=True, exist_ok=True)
            path = self._directory / STATE_FILE
            temporary = path.with_suffix(".tmp")
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as file:
                file.write(dumps({"owners": owners, "tokens": tokens}))
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, path)
            _fsync_directory(self._directory)
        self._owners, self._tokens = owners, tokens


def check_owner_name(owner: Any) -> str:
    if not isinstance(owner, str) or not valid_name(owner):
        raise ApiError(
            "invalid_request",
            f"An owner's name matches {NAME_RULE}; got {str(owner)[:60]!r}.",
            param="owner",
        )
    return owner


def check_quota(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ApiError(
            "invalid_request",
            f"`maxNamespaces` is a whole number, 0 or more; got {value!r}.",
            param="maxNamespaces",
        )
    return value


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))
