"""Shared fixtures: a fresh app per test (own data dir, scheduler driven by the test) and keys."""

from __future__ import annotations

import functools
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from simulator.app import create_app
from simulator.domain.catalog import Catalog
from simulator.fixture_loader import load_catalog
from simulator.settings import Settings

pytest_plugins = ["tests.wall_clock", "tests.scheduling"]


def share_bytecode_with_subprocesses() -> None:
    """Let the suite's Python processes cache bytecode in one folder outside the clone.

    Most of the suite's CPU is in subprocesses (every `payorch serve`, CLI call and scenario
    run), which import the simulator from this clone. With PYTHONDONTWRITEBYTECODE set (as on
    the machine this suite runs on, and presumably CI's), each compiled the project's ~150
    modules from source again: about a quarter of a second per `payorch serve`. Their bytecode
    goes to a cache in the temp dir instead (never into the clone); a PYTHONPYCACHEPREFIX the
    user set is kept.
    """
    if not os.environ.pop("PYTHONDONTWRITEBYTECODE", None):
        return
    prefix = os.environ.setdefault(
        "PYTHONPYCACHEPREFIX", os.path.join(tempfile.gettempdir(), "payorch-tests-pycache")
    )
    sys.pycache_prefix, sys.dont_write_bytecode = prefix, False


share_bytecode_with_subprocesses()


@functools.cache
def builtin_catalog() -> Catalog:
    """The built-in fixtures, parsed once per test process (Hypothesis machines build an app per
    example and cannot take a fixture)."""
    return load_catalog()


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return builtin_catalog()


@dataclass(frozen=True)
class Keys:
    """Named fixture credentials (see simulator/fixtures/merchants.yaml)."""

    sandbox_pk: str = "pk_test_5kans5915l03i9bsat8xqpwh"
    sandbox_sk: str = "sk_test_19g744zrbw5buqxqpxp5w4gj"  # mer_mercadoazul / shp_mazul_tienda
    live_pk: str = "pk_live_jcd1j8a8u38t88kgnqmenkpo"
    live_sk: str = "sk_live_lvuyxno67qob31r1gq32rfwr"
    legacy_sk: str = "sk_test_31x1jevv1rz9oflgq6p8vv0e"  # mer_mercadoazul, no shop
    promoted_sandbox_sk: str = "sk_test_7ajdfcq7gh1s4cswom70ny6u"  # shp_mazul_app -> production
    promoted_live_sk: str = "sk_live_eh4rnptn625zkyfq1pnddu3d"
    suspended_shop_sk: str = "sk_test_oo3axhkvhl7sqdvlhdr8t248"  # shp_mazul_outlet
    suspended_merchant_sk: str = "sk_test_gy49nbkm2rolimdkaoix65sz"  # mer_rapidoexpress
    restricted_sk: str = "sk_test_xzy14ho7xs40lftvqbb4y84q"  # mer_lojaverde, few methods
    restricted_pk: str = "pk_test_6npgus7qmudtc8vqukmhuvfz"
    other_sk: str = "sk_test_r0jan3b87h6d0oxxygpwsqoi"  # mer_fiestaboletos
    other_live_sk: str = "sk_live_jids3qk4phmggboscvavwysw"
    starter_sk: str = "sk_test_axi1nlhweoa8rgi34ek6c6ra"  # mer_cafeandino (starter tier)


KEYS = Keys()


@pytest.fixture
def keys() -> Keys:
    return KEYS


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    # tick_seconds=0: no background tick, tests move time with /_sim/clock/advance.
    # rate_limit off: suites hammer the API; tests/api/test_rate_limit.py turns it on.
    return Settings(data_dir=tmp_path / "data", tick_seconds=0, seed=1234, rate_limit=False)


@pytest.fixture
async def client(aiohttp_client: Any, settings: Settings, catalog: Catalog) -> TestClient:
    # The built-in fixtures parsed once per session: reading their YAML was 90% of a test app's
    # start. Sharing is what a server already does (every namespace's world reads one catalog,
    # whose records are frozen); a test with its own fixture files still gets them read.
    shared = catalog if settings.fixtures_dir is None else None
    return await aiohttp_client(create_app(settings, catalog=shared))


# Paths served outside the versioned API: control plane, checkout pages, provider pages, icons.
NON_API_PREFIXES = ("/_sim", "/c/", "/checkout/", "/static/")


class Api:
    """Thin caller: `await api.post("/payments", key, json={...})` -> (status, body, response)."""

    def __init__(self, client: TestClient) -> None:
        self.client = client

    async def call(
        self,
        method: str,
        path: str,
        key: str | None = None,
        *,
        json: Any = None,
        headers: dict[str, str] | None = None,
        data: bytes | str | None = None,
    ) -> tuple[int, Any, Any]:
        all_headers = dict(headers or {})
        if key is not None:
            all_headers.setdefault("Authorization", f"Bearer {key}")
        url = path if path.startswith(NON_API_PREFIXES) else f"/api/v1{path}"
        response = await self.client.request(
            method, url, json=json, data=data, headers=all_headers, allow_redirects=False
        )
        text = await response.text()
        body: Any
        try:
            body = await response.json(content_type=None) if text else None
        except ValueError:
            body = text
        return response.status, body, response

    def get(self, path: str, key: str | None = None, **kw: Any) -> Awaitable[tuple[int, Any, Any]]:
        return self.call("GET", path, key, **kw)

    def post(self, path: str, key: str | None = None, **kw: Any) -> Awaitable[tuple[int, Any, Any]]:
        return self.call("POST", path, key, **kw)

    async def pay(self, key: str = KEYS.sandbox_sk, **body: Any) -> dict[str, Any]:
        """Create a payment that must succeed (defaults: 50 USD by SPEI)."""
        payload = {"amount": 50, "paymentMethodId": "1001", **body}
        status, data, _ = await self.post("/payments", key, json=payload)
        assert status == 200, data
        return data

    async def advance(self, seconds: float, key: str = KEYS.sandbox_sk) -> dict[str, Any]:
        status, data, _ = await self.post("/_sim/clock/advance", key, json={"seconds": seconds})
        assert status == 200, data
        return data


async def get_claim(api: Api, claim_id: str, key: str) -> tuple[int, Any]:
    status, body, _ = await api.get(f"/claims/{claim_id}", key)
    return status, body


@pytest.fixture
def api(client: TestClient) -> Api:
    return Api(client)


def assert_error(status: int, body: Any, expected_status: int, code: str) -> dict[str, Any]:
    """The spec's envelope with the expected code and status; returns `error`."""
    assert status == expected_status, body
    assert isinstance(body, dict) and set(body) == {"error"}, body
    error = body["error"]
    assert error["code"] == code, error
    assert error["type"] and error["message"] and error["requestId"].startswith("req_")
    return error


AssertError = Callable[..., dict[str, Any]]
