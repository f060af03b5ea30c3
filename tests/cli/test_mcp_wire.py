"""`payorch mcp` answers every line on stdio (issue 31, item 9): a line it cannot read gets
JSON-RPC's parse error, a readable non-message gets invalid request, and a number no tool takes
(NaN, Infinity, 1e999, integers of 4,001 and 4,302 digits, past 64 bits) gets the API's envelope
naming the argument, never pydantic's words and never a request to the API. Written as raw
lines, as a client's bug or a hostile client would write them."""

from __future__ import annotations

import json
import select
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.cli.mcp_session import environment

ANSWER_TIMEOUT_SECONDS = 10  # a refusal takes milliseconds
START_TIMEOUT_SECONDS = 60


class Wire:
    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def answer(self, timeout: float = ANSWER_TIMEOUT_SECONDS) -> dict[str, Any]:
        stdout = self.process.stdout
        assert stdout is not None
        ready, _, _ = select.select([stdout], [], [], timeout)
        assert ready, "no answer: the client would wait for ever"
        return dict(json.loads(stdout.readline()))

    def call(self, ident: int, tool: str, arguments: str) -> dict[str, Any]:
        self.send(
            b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s",'
            b'"arguments":%s}}' % (ident, tool.encode(), arguments.encode())
        )
        answer = self.answer()
        assert answer["id"] == ident, answer
        return dict(answer["result"])


@pytest.fixture(scope="module")
def wire() -> Iterator[Wire]:
    process = subprocess.Popen(
        [sys.executable, "-m", "payorch_cli.main", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=environment(),
    )
    wire = Wire(process)
    try:
        client = {"name": "test", "version": "1"}
        params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
        wire.send(
            json.dumps(
                {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
            ).encode()
        )
        assert wire.answer(START_TIMEOUT_SECONDS)["id"] == 1
        wire.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        yield wire
    finally:
        process.kill()
        process.wait()


@pytest.mark.parametrize(
    ("tool", "arguments", "param"),
    [
        ("advance_clock", '{"seconds": NaN}', "seconds"),
        ("create_payment", '{"amount": Infinity, "payment_method_id": "1001"}', "amount"),
        ("create_payment", '{"amount": 1e999, "payment_method_id": "1001"}', "amount"),
        ("script_provider", '{"provider_id": "prv_stp_mx", "seed": 1%s}' % ("0" * 4000), "seed"),
        ("list_payments", '{"limit": %s}' % ("9" * 4302), "limit"),
        ("script_provider", '{"provider_id": "prv_stp_mx", "seed": 9223372036854775808}', "seed"),
    ],
)
def test_a_number_no_tool_takes_is_the_envelope(
    wire: Wire, tool: str, arguments: str, param: str
) -> None:
    result = wire.call(7, tool, arguments)
    assert result["isError"] is True
    error = result["structuredContent"]["error"]
    assert error["code"] == "invalid_request" and error["details"]["param"] == param
    assert "requestId" not in error  # refused before anything reached the API
    text = result["content"][0]["text"]
    assert "pydantic" not in text and "99999" not in text and len(text) < 400


@pytest.mark.parametrize(
    ("line", "code", "ident"),
    [
        (b"this is not json", -32700, None),
        (b'{"jsonrpc":"2.0","id":9,"method":"ping"\xff\xfe}', -32700, None),
        (b'{"jsonrpc":"2.0","id":9,"method":"ping"', -32700, None),
        (b"[" * 100_000, -32700, None),
        (b'{"jsonrpc":"2.0","id":9,"method":5}', -32600, 9),
        (b'{"hello": "world"}', -32600, None),
    ],
)
def test_an_unreadable_line_is_a_json_rpc_error(
    wire: Wire, line: bytes, code: int, ident: int | None
) -> None:
    wire.send(line)
    answer = wire.answer()
    assert answer["id"] == ident and answer["error"]["code"] == code, answer
    # The session goes on.
    wire.send(b'{"jsonrpc":"2.0","id":3,"method":"ping"}')
    assert wire.answer() == {"jsonrpc": "2.0", "id": 3, "result": {}}
