"""Idempotency-Key: a retried POST never executes twice, even when the retries race.

Scope: the caller's partition (merchant, environment, and for pay-ins the shop) plus the key.
Successful responses are kept for 24 simulated hours and replayed byte for byte (with
`Idempotent-Replayed: true`); error responses are never kept, so a corrected retry under the same
key executes afresh. The same key with a different body (compared by value: canonical JSON, with
numbers compared as numbers) is 409 `idempotency_conflict`, also while the first request is still
running. Keys are 1-255 printable ASCII characters.

Exactly once across a crash: the key's record is written in the operation's own commits, never in
a write of its own, so no crash can leave the operation durable and its key unknown (a retry would
execute it again). `execute` gets a `KeyHold` and calls, inside the store batch of its commit:

- `complete(status, body)` in the commit that finishes the operation (a payment: its only one);
- for an operation that awaits between two commits (a payout: the debit, then the provider call,
  then its answer), `reserve(ref)` in the first one. A retry that finds the key reserved and not
  running in this process (the server was killed, or the request cancelled, in between) calls
  `resume(hold, ref)`, which finishes the work the reservation names rather than starting it
  again; `release()`, in the commit that undoes a reserved operation (it ends in an error, which
  is never kept), frees the key.

The unit of work is the handler's: it opens the batches, so the record can join them.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from multidict import CIMultiDictProxy, istr

from simulator.clock import SimClock
from simulator.domain.errors import ApiError
from simulator.domain.ports import Table

KEY_LIFETIME_SECONDS = 86_400.0
MAX_KEY_LENGTH = 255
# Printable ASCII (space to tilde): `str.isprintable` admits any Unicode letter or symbol.
_VALID_KEY = re.compile(rf"[\x20-\x7e]{{1,{MAX_KEY_LENGTH}}}")
# Integral floats at or above this stay floats (orjson writes no integer of 64 bits or more).
_INT_LIMIT = 2.0**63
REPLAYED_HEADER = "Idempotent-Replayed"

Stored = tuple[int, bytes]
KEY_HEADER = istr("Idempotency-Key")


def idempotency_key(headers: CIMultiDictProxy[str]) -> str | None:
    """The request's Idempotency-Key, or None. Two of them (a proxy or a retry library adding
    its own) are a 400 naming the header: using the first silently could replay, or execute
    again, a request the client meant under the other key."""
    keys = headers.getall(KEY_HEADER, ())
    if len(keys) > 1:
        raise ApiError(
            "invalid_request",
            f"Send one Idempotency-Key header; this request has {len(keys)}.",
            param="Idempotency-Key",
        )
    return keys[0] if keys else None


def _body_hash(path: str, body: dict[str, Any]) -> str:
    canonical = orjson.dumps({"path": path, "body": _by_value(body)}, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(canonical).hexdigest()


def _by_value(value: Any) -> Any:
    """`value` with each number in one spelling per value: a retry that writes `10.0` or `1e1`
    where the first request wrote `10` is the same request. orjson reads a JSON number as an int
    when it is written as one (and fits 64 bits), else as a float, so equal values differ only by
    integral floats, which become ints; other floats are written in their shortest form."""
    if isinstance(value, dict):
        return {key: _by_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_by_value(item) for item in value]
    if isinstance(value, float) and value.is_integer() and abs(value) < _INT_LIMIT:
        return int(value)  # -0.0 too
    return value


class KeyHold:
    """One execution's hold on its key: the writes it adds to the operation's commits.

    Call each method inside the `store.batch()` of the commit it belongs to. Without a key they do
    nothing.
    """

    def __init__(self, table: Table | None, record_id: str, digest: str, created_at: float) -> None:
        self._table = table
        self._id = record_id
        self._digest = digest
        self._created_at = created_at
        self.completed = False

    def reserve(self, ref: dict[str, Any]) -> None:
        """The key is taken by an operation that is not finished: `ref` is what `resume` needs to
        finish it."""
        self._put({"status": None, "body": None, "ref": ref})

    def complete(self, status: int, payload: bytes) -> None:
        """The key's response, replayed to every retry for the key's lifetime."""
        self._put({"status": status, "body": payload.decode()})
        self.completed = True

    def release(self) -> None:
        """The reserved operation ended in an error (never kept): the key is free again."""
        if self._table is not None:
            self._table.delete(self._id)

    def _put(self, fields: dict[str, Any]) -> None:
        if self._table is not None:
            self._table.put(
                self._id,
                {
                    "id": self._id,
                    "bodyHash": self._digest,
                    **fields,
                    "createdAt": self._created_at,
                    "expiresAt": self._created_at + KEY_LIFETIME_SECONDS,
                },
            )


# The hold of a request without a key: its methods write nothing, so one serves them all.
NO_KEY = KeyHold(None, "", "", 0.0)

Execute = Callable[[KeyHold], Awaitable[Stored]]
Resume = Callable[[KeyHold, dict[str, Any]], Awaitable[Stored]]


class IdempotencyCache:
    def __init__(self, table: Table, clock: SimClock) -> None:
        self._table = table
        self._clock = clock
        self._in_flight: dict[str, tuple[str, asyncio.Future[Stored]]] = {}

    async def run(
        self,
        scope: tuple[str, ...],
        key: str | None,
        path: str,
        body: dict[str, Any],
        execute: Execute,
        resume: Resume | None = None,
    ) -> tuple[int, bytes, bool]:
        """(status, body, replayed). `execute` (or `resume`, for a key an interrupted execution
        reserved) returns (status, body) or raises ApiError."""
        if key is None:
            status, payload = await execute(NO_KEY)
            return status, payload, False
        if not _VALID_KEY.fullmatch(key):
            raise ApiError(
                "invalid_request",
                f"Idempotency-Key must be 1-{MAX_KEY_LENGTH} printable ASCII characters.",
                param="Idempotency-Key",
            )
        # A JSON array keeps the parts apart: a key containing "|" cannot mimic another scope.
        record_id = hashlib.sha256(orjson.dumps([*scope, key])).hexdigest()
        digest = _body_hash(path, body)
        now = self._clock.timestamp()
        record = self._table.get(record_id)
        if record is not None and record["expiresAt"] <= now:
            record = None
        if record is not None:
            if record["bodyHash"] != digest:
                raise self._conflict(key)
            if record["status"] is not None:
                return record["status"], record["body"].encode(), True
        running = self._in_flight.get(record_id)
        if running is not None:
            if running[0] != digest:
                raise self._conflict(key)
            status, payload = await asyncio.shield(running[1])
            return status, payload, True
        future: asyncio.Future[Stored] = asyncio.get_running_loop().create_future()
        self._in_flight[record_id] = (digest, future)
        try:
            if record is None:
                hold = KeyHold(self._table, record_id, digest, now)
                status, payload = await execute(hold)
            else:
                if resume is None:
                    raise RuntimeError(f"{path}: a key is reserved, and nothing can resume it")
                hold = KeyHold(self._table, record_id, digest, record["createdAt"])
                status, payload = await resume(hold, record["ref"])
            if not hold.completed:
                raise RuntimeError(f"{path} answered without completing its Idempotency-Key")
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: waiters re-raise it themselves
            raise
        finally:
            self._in_flight.pop(record_id, None)
        future.set_result((status, payload))
        return status, payload, False

    @staticmethod
    def _conflict(key: str) -> ApiError:
        return ApiError(
            "idempotency_conflict",
            f"Idempotency-Key {key!r} was already used with a different request body.",
            param="Idempotency-Key",
        )
