"""Helpers for the `payorch mcp` tests: the official SDK's client on a `payorch mcp` process."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import TextContent, TextResourceContents

SESSION_TIMEOUT_SECONDS = 120  # a hung server fails the test instead of hanging CI


def environment() -> dict[str, str]:
    """This process's environment without PAYORCH_* settings (they would redirect the server)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PAYORCH_")}


def stdio(*args: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "payorch_cli.main", "mcp", *args], env=environment()
    )


@asynccontextmanager
async def session(server: Any) -> AsyncIterator[Client]:
    with anyio.fail_after(SESSION_TIMEOUT_SECONDS):
        async with Client(server) as client:
            yield client


def _text(block: Any) -> str:
    assert isinstance(block, TextContent), block
    return block.text


async def call(client: Client, tool: str, **arguments: Any) -> tuple[dict[str, Any], str]:
    """A tool's structured data and text; fails the test on a tool error."""
    result = await client.call_tool(tool, arguments)
    text = _text(result.content[0])
    assert not result.is_error, f"{tool} failed: {text}"
    assert result.structured_content is not None
    return result.structured_content, text


async def fail(client: Client, tool: str, **arguments: Any) -> tuple[dict[str, Any], str]:
    """A tool's error envelope and text; fails the test if the call succeeded."""
    result = await client.call_tool(tool, arguments)
    text = _text(result.content[0])
    assert result.is_error, f"{tool} did not fail: {text}"
    assert result.structured_content is not None
    assert "Traceback" not in text
    return result.structured_content["error"], text


async def resource(client: Client, uri: str) -> str:
    answer = await client.read_resource(uri)
    contents = answer.contents[0]
    assert isinstance(contents, TextResourceContents)
    return contents.text


async def resource_json(client: Client, uri: str) -> Any:
    return json.loads(await resource(client, uri))
