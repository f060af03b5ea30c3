"""Named saved states of the whole server (design.md 1.5: `/_sim/state`): list, save, restore,
delete. A restore is a reset to a saved world: it passes the same gate (simulator/http/reset.py)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from aiohttp import web

from simulator.clock import isoformat
from simulator.domain.errors import ApiError
from simulator.http.handlers.sim import clock_state
from simulator.http.keys import CLOCK, RESET, SAVED_STATES, SAVED_STATES_LOCK
from simulator.http.middlewares import auth
from simulator.http.requests import read_json
from simulator.http.reset import refuses_to_wait_for_a_swap
from simulator.http.responses import json_response
from simulator.store.saved import (
    STATE_VERSION,
    IncompatibleState,
    InvalidStateName,
    SavedState,
    StateCorrupt,
    StateNotFound,
    check_name,
    payorch_version,
)


def state_view(state: SavedState) -> dict[str, Any]:
    return {
        "name": state.name,
        "createdAt": state.created_at,
        "simulatedAt": state.simulated_at,
        "offsetSeconds": round(state.offset_seconds, 3),
        "transactions": state.transactions,
        "sizeBytes": state.size_bytes,
        "version": state.version,
        "payorchVersion": state.payorch,
    }


def _name(raw: str) -> str:
    try:
        return check_name(raw)
    except InvalidStateName as exc:
        raise ApiError("invalid_request", str(exc), param="name") from None


def _not_found(name: str) -> ApiError:
    return ApiError(
        "snapshot_not_found",
        f"No saved state is named {name!r}; `payorch state list` shows them.",
        param="name",
    )


def _incompatible(exc: IncompatibleState) -> ApiError:
    return ApiError(
        "snapshot_incompatible",
        str(exc),
        param="name",
        details={
            "snapshotVersion": exc.state.version,
            "serverVersion": STATE_VERSION,
            "snapshotPayorchVersion": exc.state.payorch,
            "serverPayorchVersion": payorch_version(),
        },
    )


@auth("sandbox")
async def list_states(request: web.Request) -> web.Response:
    states = request.app[SAVED_STATES].list()
    return json_response({"data": [state_view(state) for state in states]})


@auth("sandbox")
async def save_state(request: web.Request) -> web.Response:
    body = await read_json(request)
    name = _name(body["name"])
    overwrite = bool(body.get("overwrite", False))
    app = request.app
    library = app[SAVED_STATES]
    async with app[SAVED_STATES_LOCK]:
        if not overwrite and library.exists(name):
            raise ApiError(
                "snapshot_exists",
                f"A saved state is already named {name!r}; pass overwrite: true to replace it.",
                param="name",
            )

        clock = app[CLOCK]
        data = await app[RESET].export()
        # Right after the copy, with no await between: the header describes the same moment.
        state = SavedState(
            name=name,
            version=STATE_VERSION,
            payorch=payorch_version(),
            created_at=isoformat(time.time()),
            simulated_at=isoformat(clock.timestamp()),
            offset_seconds=clock.offset_seconds,
            transactions=len(data.get("transactions", {})),
        )
        # The copy is immutable bytes: encoded and written beside the loop, while serving.
        saved = await asyncio.to_thread(library.write, state, data)
    return json_response(state_view(saved), status=201)


@refuses_to_wait_for_a_swap
@auth("sandbox")
async def restore_state(request: web.Request) -> web.Response:
    name = _name(request.match_info["name"])
    app = request.app
    if app[RESET].swapping:
        raise ApiError("restore_in_progress")
    try:
        loaded = app[SAVED_STATES].read(name)
    except StateNotFound:
        raise _not_found(name) from None
    except IncompatibleState as exc:
        raise _incompatible(exc) from None
    except StateCorrupt as exc:
        raise ApiError("snapshot_corrupt", str(exc), param="name") from None
    await app[RESET].restore(loaded)
    state = loaded.state
    return json_response(
        {
            "name": name,
            "restoredAt": isoformat(time.time()),
            "savedAt": state.created_at,
            "transactions": state.transactions,
            "clock": clock_state(request),
        }
    )


@auth("sandbox")
async def delete_state(request: web.Request) -> web.Response:
    name = _name(request.match_info["name"])
    async with request.app[SAVED_STATES_LOCK]:
        try:
            request.app[SAVED_STATES].delete(name)
        except StateNotFound:
            raise _not_found(name) from None
    return web.Response(status=204)
