"""One line per error, the same for every command."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from payorch_cli.client import ApiError


def error_line(exc: ApiError) -> str:
    """`code: message` for an API answer; a sentence with the next step for a dead server."""
    if exc.status == 0:
        if exc.code == "invalid_url":
            return exc.message
        base = exc.message.removeprefix("Cannot reach ").split(": ", 1)[0]
        return (
            f"cannot reach {base} ({unreachable_reason(exc)}); start it with `payorch serve` or "
            "point --base-url / PAYORCH_BASE_URL at a running server"
        )
    line = f"{exc.code}: {in_cli_words(exc.message)}"
    if exc.request_id:
        line += f" (request {exc.request_id})"
    return line


# The API's messages name its own fields and routes; a CLI user has flags and commands instead.
CLI_WORDS = (
    ("pass overwrite: true", "add --overwrite"),
    ("GET /_sim/providers lists them", "`payorch providers` lists them"),
)


def in_cli_words(message: str) -> str:
    for api_words, cli_words in CLI_WORDS:
        message = message.replace(api_words, cli_words)
    return message


def unreachable_reason(exc: ApiError) -> str:
    """`connection refused` out of `Cannot reach URL: [Errno 111] Connection refused`."""
    reason = exc.message.split(": ", 1)[-1]
    return reason.split("] ", 1)[-1].lower()
