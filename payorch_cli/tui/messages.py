"""Messages between workers, the app and its screens, as dataclasses.

Textual's `Message.__init__` only calls `__post_init__`, so a dataclass subclass gets its
fields and a working message. Workers post these (thread-safe); handlers run on the UI loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from textual.message import Message

from payorch_cli.client import ApiError
from payorch_cli.tui.backend import Identity


@dataclass
class StreamOpened(Message):
    """The live event stream is connected (again): what was missed must be reloaded."""


@dataclass
class StreamLost(Message):
    """The stream ended or could not be opened; the worker retries after `retry_in` s."""

    reason: str
    retry_in: float


@dataclass
class StreamRefused(Message):
    """The server refuses the stream for this key (e.g. a live key): no retry, poll instead."""

    error: ApiError


@dataclass
class ServerEvent(Message):
    """One event envelope from `GET /_sim/events`, with when it was read (perf_counter)."""

    event: dict[str, Any]
    received: float = 0.0


@dataclass
class IdentityLoaded(Message):
    identity: Identity
    team: str = ""  # the namespace's owner and quota on a team server (present.owner_and_quota)


@dataclass
class ClockSynced(Message):
    """The simulator clock as the server said it, at `at` (the app's monotonic time)."""

    now: str
    offset_seconds: float
    at: float


@dataclass
class Failed(Message):
    """A call failed: shown as a notification with the API's error code and message."""

    what: str
    error: ApiError
    quiet: bool = field(default=False)  # connection failures are shown by the header instead
