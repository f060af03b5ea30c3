"""Named saved states (`/_sim/state`): whole copies of the store and the clock, kept as files.

A saved state is one file, ``<data_dir>/snapshots/NAME.json``: a header line, then the store's
own snapshot format (``snapshot.py``: one document per line, CRC-checked), so that saving writes
the documents' stored bytes without encoding them and restoring splits lines without decoding
them::

    {"payorchState":{"version":1,"payorch":"0.1.0","name":"ready","createdAt":...}}
    {"#snapshot":{"info":{"format":2,"documents":1234,"crc32":...}}
    ,"transactions":{
    ...

The header alone answers a listing (one line read per file).  A file is written to
``NAME.json.tmp``, fsynced and renamed into place, so a reader sees the old file or the new one.
A server without a data dir keeps the same bytes in memory (lost when it stops).

`version` is `STATE_VERSION`: bumped when the stored documents change so that an older state
would mislead the services built on it; a state of another version is refused, never
half-used.  The payorch version that wrote it is kept for the error message.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Final, NamedTuple

import orjson

from simulator.store.files import TMP_SUFFIX, write_atomically
from simulator.store.snapshot import Encoded, SnapshotError, decode_snapshot, encode_snapshot

__all__ = [
    "STATE_VERSION",
    "IncompatibleState",
    "InvalidStateName",
    "Loaded",
    "SavedState",
    "SavedStates",
    "StateCorrupt",
    "StateExists",
    "StateNotFound",
]

STATE_VERSION: Final = 1
_HEAD_KEY: Final = "payorchState"
_SUFFIX: Final = ".json"
_TMP: Final = TMP_SUFFIX
# No separator, no leading dot (no `.`, `..` or hidden file), at most 64 characters.
NAME_PATTERN: Final = r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$"
_NAME = re.compile(NAME_PATTERN)
_HEAD_LIMIT: Final = 4096  # a header line is a few hundred bytes


def payorch_version() -> str:
    try:
        return metadata.version("payorch")
    except metadata.PackageNotFoundError:  # pragma: no cover - run from a source tree
        return "unknown"


class InvalidStateName(ValueError):
    pass


class StateNotFound(LookupError):
    pass


class StateExists(Exception):
    pass


class StateCorrupt(Exception):
    pass


class IncompatibleState(Exception):
    def __init__(self, state: SavedState) -> None:
        self.state = state
        super().__init__(
            f"saved state {state.name!r} has format version {state.version!r} (written by "
            f"payorch {state.payorch}); this server reads version {STATE_VERSION} only "
            f"(payorch {payorch_version()}): save it again with this version"
        )


class Loaded(NamedTuple):
    state: SavedState
    data: Encoded  # the caller's own dicts
    snapshot: bytes  # the store snapshot holding `data` as saved (before any change to it)


@dataclass(frozen=True, slots=True)
class SavedState:
    """A saved state's header: what a listing shows and what a restore needs besides the
    documents."""

    name: str
    version: int
    payorch: str
    created_at: str  # real time, ISO-8601
    simulated_at: str  # the simulated clock when it was saved
    offset_seconds: float
    transactions: int
    size_bytes: int = 0

    def header(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "payorch": self.payorch,
            "name": self.name,
            "createdAt": self.created_at,
            "simulatedAt": self.simulated_at,
            "offsetSeconds": self.offset_seconds,
            "transactions": self.transactions,
        }


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise InvalidStateName(
            "a state name is 1 to 64 characters from A-Z a-z 0-9 . _ - and does not start with "
            f"a dot; got {name[:80]!r}"
        )
    return name


class SavedStates:
    """The server's saved states: files under `directory`, or in memory when it is None."""

    def __init__(self, directory: Path | None) -> None:
        self._dir = directory
        self._memory: dict[str, bytes] = {}
        # The last state read: ((name, identity), header, documents, snapshot bytes).
        self._recent: tuple[tuple[str, object], SavedState, Encoded, bytes] | None = None
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)
            for leftover in directory.glob("*" + _SUFFIX + _TMP):  # a save cut short by a crash
                leftover.unlink(missing_ok=True)

    @property
    def directory(self) -> Path | None:
        return self._dir

    def exists(self, name: str) -> bool:
        check_name(name)
        if self._dir is None:
            return name in self._memory
        return self._path(name).is_file()

    def write(self, state: SavedState, data: Encoded) -> SavedState:
        """Write (or overwrite) `state` with `data` atomically; the state with its size.
        Blocking I/O: run it in a thread if it may be large."""
        check_name(state.name)
        head = orjson.dumps({_HEAD_KEY: state.header()}) + b"\n"
        pieces = [head, *encode_snapshot(data)]
        size = sum(map(len, pieces))
        self._forget(state.name)
        if self._dir is None:
            self._memory[state.name] = b"".join(pieces)
        else:
            write_atomically(self._path(state.name), pieces)
        return _with_size(state, size)

    def read(self, name: str) -> Loaded:
        """The header, the documents (fresh dicts, the caller's to keep) and the store snapshot's
        bytes of `name`.  Raises StateNotFound, IncompatibleState, StateCorrupt.

        The last state read is kept decoded, so restoring the same state again (before each
        test) reads and checks nothing but the file's identity (inode, size, mtime)."""
        raw, key = self._raw(name)
        recent = self._recent
        if recent is not None and recent[0] == (name, key):
            _, state, data, snapshot = recent
        else:
            assert raw is not None
            end = raw.find(b"\n")
            state = self._header(name, raw[:end] if end >= 0 else raw, len(raw))
            snapshot = raw[end + 1 :]
            try:
                data = decode_snapshot(snapshot).data
            except SnapshotError as exc:
                raise StateCorrupt(f"saved state {name!r} is damaged: {exc}") from None
            self._recent = ((name, key), state, data, snapshot)
        # The store makes the tables its own and writes into them: never the kept ones.
        return Loaded(state, {table: dict(docs) for table, docs in data.items()}, snapshot)

    def info(self, name: str) -> SavedState:
        """The header of `name` alone (one line read)."""
        check_name(name)
        if self._dir is None:
            raw, _ = self._raw(name)
            assert raw is not None
            return self._header(name, raw[: raw.find(b"\n")], len(raw))
        path = self._path(name)
        try:
            with path.open("rb") as file:
                line = file.readline(_HEAD_LIMIT).rstrip(b"\n")
                size = os.fstat(file.fileno()).st_size
        except FileNotFoundError:
            raise StateNotFound(name) from None
        return self._header(name, line, size)

    def list(self) -> list[SavedState]:
        """Every readable saved state, by name; one of another version is listed with its
        version (restoring it is refused), a damaged one is left out."""
        if self._dir is None:
            names = sorted(self._memory)
        else:
            names = sorted(
                path.name[: -len(_SUFFIX)]
                for path in self._dir.glob("*" + _SUFFIX)
                if _NAME.match(path.name[: -len(_SUFFIX)])
            )
        states = []
        for name in names:
            try:
                states.append(self.info(name))
            except (StateNotFound, StateCorrupt):
                continue  # deleted meanwhile, or not a saved state
            except IncompatibleState as exc:
                states.append(exc.state)
        return states

    def delete(self, name: str) -> None:
        check_name(name)
        self._forget(name)
        if self._dir is None:
            if self._memory.pop(name, None) is None:
                raise StateNotFound(name)
            return
        try:
            self._path(name).unlink()
        except FileNotFoundError:
            raise StateNotFound(name) from None

    # -- internals ---------------------------------------------------------------

    def _forget(self, name: str) -> None:
        if self._recent is not None and self._recent[0][0] == name:
            self._recent = None

    def _path(self, name: str) -> Path:
        assert self._dir is not None
        return self._dir / (name + _SUFFIX)

    def _raw(self, name: str) -> tuple[bytes | None, object]:
        """The bytes of `name` and what identifies them; None for bytes the last read kept."""
        check_name(name)
        if self._dir is None:
            raw = self._memory.get(name)
            if raw is None:
                raise StateNotFound(name)
            return raw, id(raw)
        try:
            fd = os.open(self._path(name), os.O_RDONLY)
        except FileNotFoundError:
            raise StateNotFound(name) from None
        try:
            stat = os.fstat(fd)
            key = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
            recent = self._recent
            if recent is not None and recent[0] == (name, key):
                return None, key
            with os.fdopen(os.dup(fd), "rb") as file:
                return file.read(), key
        finally:
            os.close(fd)

    @staticmethod
    def _header(name: str, line: bytes, size: int) -> SavedState:
        try:
            head = orjson.loads(line)[_HEAD_KEY]
            state = SavedState(
                name=name,
                version=int(head["version"]),
                payorch=str(head.get("payorch", "unknown")),
                created_at=str(head.get("createdAt", "")),
                simulated_at=str(head.get("simulatedAt", "")),
                offset_seconds=float(head.get("offsetSeconds", 0.0)),
                transactions=int(head.get("transactions", 0)),
                size_bytes=size,
            )
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise StateCorrupt(f"saved state {name!r} has no readable header ({exc})") from None
        if state.version != STATE_VERSION:
            raise IncompatibleState(state)
        return state


def _with_size(state: SavedState, size: int) -> SavedState:
    return SavedState(
        state.name,
        state.version,
        state.payorch,
        state.created_at,
        state.simulated_at,
        state.offset_seconds,
        state.transactions,
        size,
    )
