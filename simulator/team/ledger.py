"""The namespaces of a team server behind `--workers`, counted in one place.

Each worker holds only the namespaces placed on it, so no worker alone can say how many an owner
or the server holds: two workers counting their own would both let the last namespace under a
quota through. The ledger is one file in the team directory every worker shares (`namespaces.json`:
each namespace's owner, the creation times of the last minute), read and rewritten under an
exclusive `flock` of `namespaces.lock`, so checking a quota and counting the new namespace is one
step for the whole server.

Crashes: a namespace is counted before it is made and uncounted after it is deleted, so a worker
killed in between leaves the ledger counting one too many (never too few: the count never passes
a quota). The file is replaced by atomic rename, so a kill leaves the old state or the new; the
lock dies with its holder. On start each worker makes the ledger's entries for its own
namespaces what its disk holds (`reconcile`), which drops what a crash left over.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from simulator.jsonio import dumps, loads
from simulator.team.limits import WINDOW_SECONDS, CreationBounds, check_owner_quota

FILE = "namespaces.json"
LOCK = "namespaces.lock"


class NamespaceLedger:
    def __init__(self, directory: Path, *, fsync: bool = False) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._path = directory / FILE
        self._lock = directory / LOCK
        self._fsync = fsync

    def reserve(
        self,
        name: str,
        owner: str | None,
        quota: int | None,
        bounds: CreationBounds,
        now: float,
    ) -> None:
        """Count `name` (about to be made) for `owner`, or raise the server's or the owner's
        refusal; checked and counted under one lock."""
        with self._held() as state:
            spaces: dict[str, str | None] = state["namespaces"]
            spaces.pop(name, None)  # left by a crash between counting and making: not twice
            made = [t for t in state["made"] if t > now - WINDOW_SECONDS]
            CreationBounds(bounds.max_namespaces, bounds.per_minute, made).check(now, len(spaces))
            if owner is not None and quota is not None:
                count = sum(1 for o in spaces.values() if o == owner)
                check_owner_quota(owner, count, quota)
            spaces[name] = owner
            state["made"] = [*made, now]
            self._write(state)

    def release(self, name: str) -> None:
        """`name` is deleted: no longer counted."""
        with self._held() as state:
            if state["namespaces"].pop(name, False) is not False:
                self._write(state)

    def reconcile(self, mine: Callable[[str], bool], present: Mapping[str, str | None]) -> None:
        """Make the entries of the names `mine` places on this worker exactly `present`."""
        with self._held() as state:
            spaces = {n: o for n, o in state["namespaces"].items() if not mine(n)}
            state["namespaces"] = {**spaces, **present}
            self._write(state)

    def count(self, owner: str | None = None) -> int:
        """The server's namespaces (besides `default`), or `owner`'s."""
        spaces = self._read()["namespaces"]
        if owner is None:
            return len(spaces)
        return sum(1 for o in spaces.values() if o == owner)

    @contextlib.contextmanager
    def _held(self) -> Iterator[dict[str, Any]]:
        fd = os.open(self._lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield self._read()
        finally:
            os.close(fd)  # closing the only descriptor releases the lock

    def _read(self) -> dict[str, Any]:
        try:
            state = loads(self._path.read_bytes())
        except FileNotFoundError:
            state = {}
        return {"namespaces": dict(state.get("namespaces", {})), "made": state.get("made", [])}

    def _write(self, state: dict[str, Any]) -> None:
        temporary = self._path.with_suffix(".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as file:
            file.write(dumps(state))
            if self._fsync:
                file.flush()
                os.fsync(file.fileno())
        os.replace(temporary, self._path)
