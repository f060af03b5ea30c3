"""Idempotency-Key: a retried POST never executes twice, even when the retries race.

Scope: the caller's partition (merchant, environment, and for pay-ins the shop) plus the key.
Successful responses are kept for 24 simulated hours and replayed byte for byte (with
`Idempotent-Replayed: true`); error responses are never kept, so a corrected retry under the same
key executes afresh. The same key with a different body (compared by value: canonical JSON, with
numbers compared as numbers) is 409 `idempotency_conflict`, also while the first request is still
running. Keys are 1-255 printable ASCII characters.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

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
        execute: Callable[[], Awaitable[Stored]],
    ) -> tuple[int, bytes, bool]:
        """(status, body, replayed). `execute` returns (status, body) or raises ApiError."""
        if key is None:
            status, payload = await execute()
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
        if record is not None and record["expiresAt"] > now:
            if record["bodyHash"] != digest:
                raise self._conflict(key)
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
            status, payload = await execute()
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: waiters re-raise it themselves
            raise
        finally:
            self._in_flight.pop(record_id, None)
        self._table.put(
            record_id,
            {
                "id": record_id,
                "bodyHash": digest,
                "status": status,
                "body": payload.decode(),
                "createdAt": now,
                "expiresAt": now + KEY_LIFETIME_SECONDS,
            },
        )
        future.set_result((status, payload))
        return status, payload, False

    @staticmethod
    def _conflict(key: str) -> ApiError:
        return ApiError(
            "idempotency_conflict",
            f"Idempotency-Key {key!r} was already used with a different request body.",
            param="Idempotency-Key",
        )
