"""GET /metrics in team mode: Prometheus text through prometheus_client, admin only, per
namespace; summed over the workers of `--workers` (siblings asked as `Settings.peers`)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient
from prometheus_client.parser import text_string_to_metric_families

from simulator.app import create_app
from simulator.domain.egress import EgressPolicy
from simulator.settings import Settings
from tests.api.test_namespaces import create
from tests.api.webhook_receiver import drain, paid_payment, start_receiver, subscribe
from tests.conftest import KEYS, Api, assert_error

ADMIN = "pat_0123456789abcdef0123456789abcdef"


def team_settings(data_dir: Path, **kw: Any) -> Settings:
    return Settings(
        data_dir=data_dir,
        tick_seconds=0,
        seed=1234,
        rate_limit=False,
        team=True,
        admin_token=ADMIN,
        **kw,
    )


async def scrape(client: TestClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = await client.get("/metrics", headers={"Authorization": f"Bearer {ADMIN}"})
    assert response.status == 200, await response.text()
    assert response.headers["Content-Type"].startswith("text/plain; version=")
    samples = {}
    for family in text_string_to_metric_families(await response.text()):
        for sample in family.samples:
            samples[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return samples


async def get_metrics(client: TestClient, authorization: str | None) -> tuple[int, Any]:
    headers = {"Authorization": authorization} if authorization else {}
    response = await client.get("/metrics", headers=headers)
    text = await response.text()
    return response.status, (await response.json() if response.status != 200 else text)


def value(samples: dict[Any, float], name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


async def test_metrics_are_admin_only(aiohttp_client: Any, tmp_path: Path) -> None:
    client = await aiohttp_client(create_app(team_settings(tmp_path / "d")))
    status, body = await get_metrics(client, None)
    assert_error(status, body, 401, "missing_credentials")
    for key in (KEYS.sandbox_sk, KEYS.live_sk, "adm_wrong", ADMIN + "x", ADMIN[:-1]):
        status, body = await get_metrics(client, f"Bearer {key}")
        assert_error(status, body, 403, "permission_denied")
    status, body = await get_metrics(client, f"Basic {ADMIN}")
    assert_error(status, body, 403, "permission_denied")
    status, body = await get_metrics(client, f"Bearer {ADMIN}")
    assert status == 200 and "payorch_http_requests_total" in body


async def test_no_metrics_outside_team_mode(client: TestClient) -> None:
    status, body = await get_metrics(client, f"Bearer {KEYS.sandbox_sk}")
    assert_error(status, body, 404, "route_not_found")


async def test_figures_per_namespace(
    aiohttp_client: Any, aiohttp_server: Any, tmp_path: Path
) -> None:
    policy = EgressPolicy.parse(allow=("127.0.0.1",))
    settings = team_settings(tmp_path / "d", egress_policy=policy)
    client = await aiohttp_client(create_app(settings))
    api = Api(client)
    receiver = await start_receiver(aiohttp_server)
    await subscribe(api, receiver.url)
    await subscribe(api, "https://169.254.169.254/hooks")
    await paid_payment(api)  # two events, each to both subscriptions
    space = await create(api, "ci-1", ADMIN)  # team mode: namespaces are the admin's to make
    status, _, _ = await api.call(
        "POST", "/payments", space.sk, json={"amount": 50, "paymentMethodId": "1001"}
    )
    assert status == 200
    await api.get("/payments/pay_nope", KEYS.sandbox_sk)
    await client.request("PROPFIND", "/no/such/path/42")  # no series of its own
    await drain(client)
    samples = await scrape(client)
    requests = "payorch_http_requests_total"
    post = {"method": "POST", "route": "/api/v1/payments", "status": "200"}
    assert value(samples, requests, namespace="default", **post) == 1
    assert value(samples, requests, namespace="ci-1", **post) == 1
    assert (
        value(
            samples,
            requests,
            namespace="default",
            method="GET",
            route="/api/v1/payments/{id}",
            status="404",
        )
        == 1
    )
    other = {"method": "OTHER", "route": "unmatched", "namespace": "default"}
    assert (
        value(samples, requests, status="405", **other)
        + value(samples, requests, status="404", **other)
        == 1
    )
    assert not any("/no/such" in str(labels) for _, labels in samples)
    latency = "payorch_http_request_duration_seconds_count"
    assert value(samples, latency, namespace="ci-1", route="/api/v1/payments") == 1
    bucket = "payorch_http_request_duration_seconds_bucket"
    assert value(samples, bucket, namespace="ci-1", route="/api/v1/payments", le="+Inf") == 1
    deliveries = "payorch_webhook_deliveries_total"
    assert value(samples, deliveries, namespace="default", outcome="succeeded") == 2
    assert value(samples, deliveries, namespace="default", outcome="refused") == 2
    assert value(samples, "payorch_worlds_loaded") == 2
    assert ("payorch_scheduler_jobs", (("namespace", "ci-1"),)) in samples
    assert value(samples, "payorch_scheduler_jobs", namespace="default") >= 1  # expiries
    assert value(samples, "payorch_disk_bytes", namespace="default") > 0
    assert value(samples, "payorch_disk_bytes", namespace="ci-1") > 0


async def test_two_servers_in_one_process_keep_their_own_figures_and_workers_sum(
    aiohttp_client: Any, tmp_path: Path
) -> None:
    """A worker of several (`peers`) answers its siblings' figures summed with its own; a
    sibling asked by a peer answers its own only. Two servers in one process: no global
    registry."""
    sibling = await aiohttp_client(create_app(team_settings(tmp_path / "b")))
    peer_url = str(sibling.make_url("")).rstrip("/")
    # Listed among its own peers too (a deployment may give every worker one list): once.
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    peers = (peer_url, f"http://127.0.0.1:{port}")
    first = await aiohttp_client(
        create_app(team_settings(tmp_path / "a", peers=peers)), server_kwargs={"port": port}
    )
    for _ in range(2):
        await Api(sibling).get("/ping", KEYS.sandbox_sk)
    await Api(first).get("/ping", KEYS.sandbox_sk)
    ping = {"namespace": "default", "method": "GET", "route": "/api/v1/ping", "status": "200"}
    own = await scrape(sibling)
    assert value(own, "payorch_http_requests_total", **ping) == 2
    summed = await scrape(first)
    assert value(summed, "payorch_http_requests_total", **ping) == 3
    assert value(summed, "payorch_worlds_loaded") == 2
    count = "payorch_http_request_duration_seconds_count"
    assert value(summed, count, namespace="default", route="/api/v1/ping") == 3
    # The sibling was scraped once by the first (its own /metrics, counted there).
    again = await scrape(sibling)
    metrics = {"namespace": "default", "method": "GET", "route": "/metrics", "status": "200"}
    assert value(again, "payorch_http_requests_total", **metrics) == 2
