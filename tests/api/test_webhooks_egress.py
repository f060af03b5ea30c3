"""Team mode's webhook egress policy, with real connections: every refused delivery is recorded
as failed with its reason, and a listener that counts connections shows none was made.

Names are served by a test resolver at the engine's resolver seam (`create_app(resolver=...)`),
so no test depends on DNS; the listeners are on this machine's loopback addresses (127.0.0.1,
127.0.0.2, ::1), which the policy refuses like any private address."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.test_utils import TestClient

from simulator.app import create_app
from simulator.domain.egress import EgressPolicy
from simulator.events.egress import guarded_connector, refusal_in
from simulator.http.keys import ENGINE, WORLDS
from simulator.settings import Settings
from tests.api.test_namespaces import create
from tests.api.webhook_receiver import deliveries, drain, paid_payment, subscribe
from tests.conftest import Api


class Listener:
    """A TCP listener that counts the connections it accepts and answers each request with
    `status` (and `location`, for a redirect)."""

    def __init__(self, status: int = 200, location: str | None = None) -> None:
        self.connections = 0
        self.status = status
        self.location = location
        self.server: asyncio.Server | None = None
        self.port = 0

    async def start(self, host: str) -> Listener:
        self.server = await asyncio.start_server(self._serve, host, 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            await reader.readexactly(length)
            extra = f"Location: {self.location}\r\n" if self.location else ""
            writer.write(
                f"HTTP/1.1 {self.status} X\r\n{extra}Content-Length: 0\r\n"
                "Connection: close\r\n\r\n".encode()
            )
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()


class NamesResolver(AbstractResolver):
    """Test names: each answers its addresses (no DNS)."""

    def __init__(self, names: dict[str, list[str]]) -> None:
        self.names = names

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        if host not in self.names:
            raise OSError(f"no such test name {host}")
        return [
            {
                "hostname": host,
                "host": address,
                "port": port,
                "family": socket.AF_INET6 if ":" in address else socket.AF_INET,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
            for address in self.names[host]
        ]

    async def close(self) -> None:
        pass


@pytest.fixture
async def listeners() -> AsyncIterator[Callable[..., Any]]:
    made: list[Listener] = []

    async def make(host: str = "127.0.0.1", **kw: Any) -> Listener:
        listener = await Listener(**kw).start(host)
        made.append(listener)
        return listener

    yield make
    for listener in made:
        await listener.close()


ADMIN = "pat_0123456789abcdef0123456789abcdef"  # team mode's admin token in these tests


async def team_api(
    aiohttp_client: Any,
    tmp_path: Path,
    *,
    policy: EgressPolicy | None = None,
    names: dict[str, list[str]] | None = None,
    team: bool = True,
) -> Api:
    settings = Settings(
        data_dir=tmp_path / "data",
        tick_seconds=0,
        seed=1234,
        rate_limit=False,
        team=team,
        admin_token=ADMIN if team else None,
        egress_policy=policy,
    )
    resolver = (lambda: NamesResolver(names)) if names is not None else None
    client: TestClient = await aiohttp_client(create_app(settings, resolver=resolver))
    return Api(client)


async def delivered(api: Api, url: str) -> list[dict[str, Any]]:
    """Subscribe `url`, fire a payment's two events, and answer the deliveries once recorded."""
    sub = await subscribe(api, url)
    await paid_payment(api)
    await drain(api.client)
    return await deliveries(api, sub["id"])


def assert_refused(rows: list[dict[str, Any]], *why: str) -> None:
    assert len(rows) == 2, rows
    for row in rows:
        assert row["status"] == "failed", row
        assert row["attemptCount"] == 1 and row["nextAttemptAt"] is None, row
        attempt = row["attempts"][0]
        assert attempt["httpStatus"] is None, attempt
        error = attempt["error"]
        assert error.startswith("refused by the egress policy: "), error
        for part in why:
            assert part in error, error


async def test_numeric_hosts_of_loopback_are_refused_in_every_form(
    aiohttp_client: Any, tmp_path: Path, listeners: Callable[..., Any]
) -> None:
    v4 = await listeners("127.0.0.1")
    v6 = await listeners("::1")
    api = await team_api(aiohttp_client, tmp_path)
    port = v4.port
    cases = {
        f"http://127.0.0.1:{port}/hooks": "127.0.0.1 (loopback)",
        f"http://[::1]:{v6.port}/hooks": "::1 (loopback)",
        f"https://[::ffff:127.0.0.1]:{port}/hooks": "IPv4-mapped 127.0.0.1) (loopback)",
        f"https://2130706433:{port}/hooks": "2130706433 is 127.0.0.1 (loopback)",
        f"https://0177.0.0.1:{port}/hooks": "0177.0.0.1 is 127.0.0.1 (loopback)",
        f"https://0x7f.0.0.1:{port}/hooks": "0x7f.0.0.1 is 127.0.0.1 (loopback)",
        f"https://[::]:{port}/hooks": ":: (unspecified)",
        "https://169.254.169.254/latest/meta-data/": "169.254.169.254 (link-local",
        "https://10.0.0.7/hooks": "10.0.0.7 (private)",
        "https://[fd00:ec2::254]/hooks": "fd00:ec2::254 (private",
    }
    for url, why in cases.items():
        assert_refused(await delivered(api, url), why)
    assert v4.connections == 0 and v6.connections == 0


async def test_names_are_refused_when_any_address_is(
    aiohttp_client: Any, tmp_path: Path, listeners: Callable[..., Any]
) -> None:
    """127.0.0.1 is allowed here, so a name's other address is what refuses it: had only the
    bad address been dropped, the listener would have had the delivery."""
    listener = await listeners("127.0.0.1")
    names = {
        "loop.test": ["127.0.0.2"],
        "metadata.test": ["169.254.169.254", "127.0.0.1"],
        "private.test": ["10.1.2.3", "127.0.0.1"],
        "mapped.test": ["::ffff:127.0.0.9", "127.0.0.1"],
        "fine.test": ["127.0.0.1"],
    }
    policy = EgressPolicy.parse(allow=("127.0.0.1",))
    api = await team_api(aiohttp_client, tmp_path, policy=policy, names=names)
    port = listener.port
    assert_refused(await delivered(api, f"https://loop.test:{port}/h"), "loop.test resolves to")
    assert_refused(
        await delivered(api, f"https://metadata.test:{port}/h"),
        "metadata.test resolves to 169.254.169.254 (link-local (cloud metadata))",
    )
    assert_refused(await delivered(api, f"https://private.test:{port}/h"), "10.1.2.3 (private)")
    assert_refused(await delivered(api, f"https://mapped.test:{port}/h"), "IPv4-mapped 127.0.0.9")
    assert listener.connections == 0
    # The control: the allowed address is reached (plain http, as the listener speaks).
    rows = await delivered(api, f"http://127.0.0.1:{port}/h")
    assert {row["status"] for row in rows} == {"succeeded"}
    assert listener.connections == 2


async def test_a_redirect_to_a_private_address_is_not_followed(
    aiohttp_client: Any, tmp_path: Path, listeners: Callable[..., Any]
) -> None:
    inside = await listeners("127.0.0.2")
    front = await listeners("127.0.0.1", status=302, location=f"http://127.0.0.2:{0}/internal")
    front.location = f"http://127.0.0.2:{inside.port}/internal"
    policy = EgressPolicy.parse(allow=("127.0.0.1",))
    api = await team_api(aiohttp_client, tmp_path, policy=policy)
    rows = await delivered(api, f"http://127.0.0.1:{front.port}/h")
    for row in rows:
        attempt = row["attempts"][0]
        assert attempt["httpStatus"] == 302, attempt
        assert attempt["error"].startswith("redirect not followed"), attempt
        assert front.location in attempt["error"]
    assert front.connections == 2 and inside.connections == 0


@pytest.mark.long(10)
async def test_rules_adjust_the_built_in_denials(
    aiohttp_client: Any, tmp_path: Path, listeners: Callable[..., Any]
) -> None:
    """An allowed name may resolve to a private address; a denied name or a longer denied
    prefix wins over a shorter allowed one."""
    listener = await listeners("127.0.0.1")
    names = {"hooks.internal": ["127.0.0.1"], "bad.internal": ["127.0.0.1"]}
    policy = EgressPolicy.parse(
        allow=("*.internal", "127.0.0.0/8"), deny=("bad.internal", "127.0.0.1/32")
    )
    api = await team_api(aiohttp_client, tmp_path, policy=policy, names=names)
    port = listener.port
    assert_refused(
        await delivered(api, f"https://bad.internal:{port}/h"),
        "bad.internal is denied (--egress-deny bad.internal)",
    )
    assert_refused(
        await delivered(api, f"http://127.0.0.1:{port}/h"),
        "127.0.0.1 (--egress-deny 127.0.0.1/32)",
    )
    assert listener.connections == 0
    # http:// to a name is refused at subscription (design.md 1.4): the allowed name by https,
    # which the plain listener cannot speak; it was connected to all the same.
    rows = await delivered(api, f"https://hooks.internal:{port}/h")
    assert all(not row["attempts"][0]["error"].startswith("refused") for row in rows), rows
    assert listener.connections >= 1


async def test_local_mode_keeps_loopback_receivers(
    aiohttp_client: Any, tmp_path: Path, listeners: Callable[..., Any]
) -> None:
    """Without team mode and without rules nothing is refused; with one rule the policy is on."""
    listener = await listeners("127.0.0.1")
    api = await team_api(aiohttp_client, tmp_path, team=False)
    rows = await delivered(api, f"http://127.0.0.1:{listener.port}/h")
    assert {row["status"] for row in rows} == {"succeeded"}
    assert listener.connections == 2
    ruled = await team_api(
        aiohttp_client,
        tmp_path / "ruled",
        team=False,
        policy=EgressPolicy.parse(deny=("example.com",)),
    )
    assert_refused(await delivered(ruled, f"http://127.0.0.1:{listener.port}/h"), "loopback")
    assert listener.connections == 2


async def test_a_namespace_is_held_to_the_same_policy(
    aiohttp_client: Any, tmp_path: Path, listeners: Callable[..., Any]
) -> None:
    listener = await listeners("127.0.0.1")
    api = await team_api(aiohttp_client, tmp_path)
    space = await create(api, "tenant-a", ADMIN)  # team mode: the admin makes namespaces
    rows = await delivered_as(api, space.sk, f"http://127.0.0.1:{listener.port}/h")
    assert_refused(rows, "127.0.0.1 (loopback)")
    assert listener.connections == 0


async def delivered_as(api: Api, key: str, url: str) -> list[dict[str, Any]]:
    sub = await subscribe(api, url, key=key)
    await paid_payment(api, key)
    await drain(api.client)  # default's engine; the namespace's is drained below
    for world in api.client.server.app[WORLDS].loaded():
        await world[ENGINE].drain()
    return await deliveries(api, sub["id"], key)


async def test_the_socket_factory_refuses_an_address_that_skipped_the_other_checks(
    listeners: Callable[..., Any],
) -> None:
    """The last check alone: an IP literal never reaches the resolver, and a bare session has no
    engine to judge the URL first; the connector's socket factory still refuses it."""
    listener = await listeners("127.0.0.1")
    connector = guarded_connector(EgressPolicy.parse(), None, limit=1, limit_per_host=1)
    async with aiohttp.ClientSession(connector=connector) as session:
        with pytest.raises(aiohttp.ClientConnectorError) as caught:
            await session.post(f"http://127.0.0.1:{listener.port}/h", data=b"{}")
    assert refusal_in(caught.value) == "refused by the egress policy: 127.0.0.1 (loopback)"
    assert listener.connections == 0


class RebindingResolver(NamesResolver):
    """A name that answers an allowed address first, then an internal one (DNS rebinding)."""

    def __init__(self) -> None:
        super().__init__({"rebind.test": ["127.0.0.1"]})

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        answer = await super().resolve(host, port, family)
        self.names["rebind.test"] = ["127.0.0.2"]
        return answer


@pytest.mark.long(11)
async def test_a_name_that_rebinds_is_judged_on_its_new_answer(
    aiohttp_client: Any, tmp_path: Path, listeners: Callable[..., Any]
) -> None:
    outside = await listeners("127.0.0.1")
    inside = await listeners("127.0.0.2")
    settings = Settings(
        data_dir=tmp_path / "data",
        tick_seconds=0,
        seed=1234,
        rate_limit=False,
        team=True,
        egress_policy=EgressPolicy.parse(allow=("127.0.0.1",)),
    )
    resolver = RebindingResolver()
    api = Api(await aiohttp_client(create_app(settings, resolver=lambda: resolver)))
    # https:// for a name (design.md 1.4): the plain listener fails the handshake, but was
    # connected to, which is what is counted.
    first = await delivered(api, f"https://rebind.test:{outside.port}/h")
    assert all(not row["attempts"][0]["error"].startswith("refused") for row in first), first
    assert outside.connections >= 1
    # Another port is another connection pool: the name is resolved again, and now answers
    # the internal address.
    assert_refused(
        await delivered(api, f"https://rebind.test:{inside.port}/h"),
        "rebind.test resolves to 127.0.0.2 (loopback)",
    )
    assert inside.connections == 0
