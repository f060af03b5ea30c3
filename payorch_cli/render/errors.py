"""One line per error, the same for every command."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from payorch_cli.client import ApiError


def error_line(exc: ApiError) -> str:
    """`code: message` for an API answer; a sentence with the next step for a dead server."""
    if exc.status == 0:
        reason = exc.message.split(": ", 1)[-1]
        reason = reason.split("] ", 1)[-1].lower()  # "[Errno 111] Connection refused"
        base = exc.message.removeprefix("Cannot reach ").split(": ", 1)[0]
        if exc.code == "invalid_url":
            return exc.message
        return (
            f"cannot reach {base} ({reason}); start it with `payorch serve` or point "
            "--base-url / PAYORCH_BASE_URL at a running server"
        )
    line = f"{exc.code}: {exc.message}"
    if exc.request_id:
        line += f" (request {exc.request_id})"
    return line
