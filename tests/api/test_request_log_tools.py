"""Requests of payorch's own tools (issue 23, item 9): tagged with X-Payorch-Tool, kept in the log
with their tag, left out of lists, live tails and coverage unless `includeTools=true`."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tests.conftest import Api, Keys, assert_error

TUI = {"X-Payorch-Tool": "tui"}


async def listed(api: Api, key: str, query: str = "") -> list[dict[str, Any]]:
    status, body, _ = await api.get(f"/_sim/requests{query}", key)
    assert status == 200, body
    return list(body["data"])


async def test_a_tools_requests_are_kept_tagged_and_left_out_by_default(
    api: Api, keys: Keys
) -> None:
    for _ in range(3):  # a TUI polling
        status, _, _ = await api.get("/payments", keys.sandbox_sk, headers=TUI)
        assert status == 200
    _, _, polled = await api.get("/me/balance", keys.sandbox_sk, headers=TUI)
    await api.pay()
    [mine] = await listed(api, keys.sandbox_sk)
    assert (mine["method"], mine["path"], mine["tool"]) == ("POST", "/api/v1/payments", None)
    every = await listed(api, keys.sandbox_sk, "?includeTools=true")
    assert [r["tool"] for r in every] == [None, "tui", "tui", "tui", "tui"]
    assert len(await listed(api, keys.sandbox_sk, "?includeTools=false")) == 1
    # Looked up by its id, a tool's request is there.
    status, one, _ = await api.get(
        f"/_sim/requests/{polled.headers['X-Request-Id']}", keys.sandbox_sk
    )
    assert status == 200 and one["tool"] == "tui"


async def test_the_live_tail_leaves_tools_out_unless_asked(api: Api, keys: Keys) -> None:
    async def tail(query: str) -> Any:
        response = await api.client.get(
            f"/_sim/requests/stream{query}", headers={"Authorization": f"Bearer {keys.sandbox_sk}"}
        )
        assert response.status == 200
        assert await response.content.readline() == b"retry: 3000\n"
        return response

    async def next_summary(response: Any) -> dict[str, Any]:
        while True:
            line = await asyncio.wait_for(response.content.readline(), 5)
            if line.startswith(b"data: "):
                return dict(json.loads(line[6:]))

    plain, everything = await tail(""), await tail("?includeTools=true")
    await api.get("/payments", keys.sandbox_sk, headers=TUI)
    await api.pay()
    assert (await next_summary(plain))["method"] == "POST"
    assert [(await next_summary(everything))["tool"] for _ in range(2)] == ["tui", None]
    plain.close()
    everything.close()


async def test_coverage_leaves_out_what_a_tools_requests_reached(api: Api, keys: Keys) -> None:
    body = {"amount": 50, "paymentMethodId": "1001"}
    status, _, _ = await api.post("/payments", keys.sandbox_sk, json=body, headers=TUI)
    assert status == 200
    await api.get("/payments/TXN-nope", keys.sandbox_sk, headers=TUI)

    async def reached(query: str) -> tuple[int, int]:
        status, report, _ = await api.get(f"/_sim/coverage{query}", keys.sandbox_sk)
        assert status == 200, report
        rows = {r["key"]: r["reached"] for t in report["stateTables"] for r in t["rows"]}
        errors = {e["code"]: e["reached"] for e in report["errors"]}
        return rows["transaction.create"], errors["transaction_not_found"]

    assert await reached("") == (0, 0)
    assert await reached("?includeTools=true") == (1, 1)
    await api.pay()
    assert await reached("") == (1, 0)


@pytest.mark.parametrize("path", ["/_sim/requests", "/_sim/requests/stream", "/_sim/coverage"])
async def test_include_tools_takes_true_or_false(api: Api, keys: Keys, path: str) -> None:
    status, body, _ = await api.get(f"{path}?includeTools=yes", keys.sandbox_sk)
    assert assert_error(status, body, 400, "invalid_request")["param"] == "includeTools"
