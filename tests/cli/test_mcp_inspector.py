"""`payorch mcp` driven by a client no one here wrote: the MCP Inspector's CLI mode (npm
`@modelcontextprotocol/inspector`), which .ci/run installs into a cache directory outside the
repository and names in PAYORCH_MCP_INSPECTOR. Skipped, saying why, where it is not installed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from payorch_cli.mcp.tools import TOOLS
from tests.cli.mcp_session import environment

INSTALL = (
    "npm install --prefix ~/.cache/payorch-ci/mcp-inspector @modelcontextprotocol/inspector@0.17.5"
)
DEFAULT = Path.home() / ".cache/payorch-ci/mcp-inspector/node_modules/.bin/mcp-inspector"


def _inspector() -> str:
    found = os.environ.get("PAYORCH_MCP_INSPECTOR") or str(DEFAULT)
    if shutil.which("node") is None:
        pytest.skip("the MCP Inspector needs Node.js, which is not installed")
    if not Path(found).is_file():
        pytest.skip(f"the MCP Inspector CLI is not installed at {found} (.ci/run does: {INSTALL})")
    return found


def _inspect(*args: str) -> Any:
    command = [_inspector(), "--cli", sys.executable, "-m", "payorch_cli.main", "mcp", *args]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=120, env=environment(), check=False
    )
    assert done.returncode == 0, done.stderr + done.stdout
    return json.loads(done.stdout)


def test_the_inspector_lists_the_tools() -> None:
    listed = _inspect("--method", "tools/list")
    assert {tool["name"] for tool in listed["tools"]} == {spec.name for spec in TOOLS}


def test_the_inspector_calls_a_tool() -> None:
    called = _inspect(
        "--method", "tools/call", "--tool-name", "create_payment",
        "--tool-arg", "amount=12", "--tool-arg", 'payment_method_id="1001"',
    )  # fmt: skip
    assert called.get("isError") in (None, False), called
    assert called["structuredContent"]["status"] == "pending"
