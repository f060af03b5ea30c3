"""The stdio transport, with an answer to every line (issue 31, item 9).

The SDK's `stdio_server` parses each line itself and, when it cannot, hands the exception to a
server that only logs it: a client that sent a line it cannot read (not UTF-8, not JSON, an
integer of more than Python's 4,300 digits, JSON that is no JSON-RPC message) waits for an answer
for ever. So the lines are read here first: an unreadable one is answered with JSON-RPC's parse
error (-32700), a readable one that is not a message with invalid request (-32600, its id when
it has one), both through the SDK's own writer (no two writers on one pipe); the SDK gets the
rest re-encoded, in a form it reads as we did. Numbers JSON-RPC carries but no tool takes (NaN,
Infinity, 1e999, integers past 20 digits: read as infinite) reach the tools' argument check,
which answers them with the API's envelope (server.py).

The one private name of the SDK is here: `MCPServer._lowlevel_server`, the server to run on
our streams (`MCPServer.run_stdio_async` takes no streams of its own).
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    jsonrpc_message_adapter,
)

# Longer integers are read as infinite without being converted (Python refuses to convert past
# 4,300 digits, and converting is quadratic below that): no argument of a tool is that large.
MAX_INTEGER_DIGITS = 20


class OutOfRange(float):
    """An integer literal too long to be any argument: infinite, so the argument check refuses
    it as it refuses Infinity."""

    def __new__(cls, literal: str) -> OutOfRange:
        return super().__new__(cls, "-inf" if literal.startswith("-") else "inf")


def _integer(literal: str) -> int | float:
    return int(literal) if len(literal.lstrip("-")) <= MAX_INTEGER_DIGITS else OutOfRange(literal)


class Lines:
    """stdin as the SDK's reader iterates it: only lines it will read as a message."""

    def __init__(self) -> None:
        self.replies: Any = None  # the SDK's write stream, once the transport is open
        self._stdin = anyio.wrap_file(sys.stdin.buffer)

    async def __aiter__(self) -> AsyncIterator[str]:
        async for raw in self._stdin:
            if not raw.strip():
                continue
            line = await self._message(raw)
            if line is not None:
                yield line

    async def _message(self, raw: bytes) -> str | None:
        try:
            parsed = json.loads(raw.decode("utf-8"), parse_int=_integer)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            await self._reply(None, PARSE_ERROR, f"Parse error: {_why(exc)}")
            return None
        line = json.dumps(parsed, ensure_ascii=False)
        try:
            jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValueError:
            ident = parsed.get("id") if isinstance(parsed, dict) else None
            if not isinstance(ident, str | int) or isinstance(ident, bool | OutOfRange):
                ident = None
            await self._reply(ident, INVALID_REQUEST, "Invalid Request: not a JSON-RPC message")
            return None
        return line

    async def _reply(self, ident: str | int | None, code: int, message: str) -> None:
        error = JSONRPCError(jsonrpc="2.0", id=ident, error=ErrorData(code=code, message=message))
        await self.replies.send(SessionMessage(error))


def _why(exc: Exception) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return f"the line is not UTF-8 (byte {exc.start})"
    if isinstance(exc, json.JSONDecodeError):
        return exc.msg  # without the line and column: a stdio message is one line
    return "nested too deeply" if isinstance(exc, RecursionError) else "not JSON"


async def serve(server: MCPServer) -> None:
    lines = Lines()
    # Lines reads like the anyio text stream the SDK annotates, and answers what it cannot read.
    async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]  # duck-typed stream
        lines.replies = write_stream
        lowlevel = server._lowlevel_server  # private: see the module's docstring
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
