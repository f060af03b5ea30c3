"""The generated nginx configuration routes as the servers read a request's namespace, and its
`hash` picks the worker simulator.domain.placement.owner names: real nginx, whose upstreams are
stand-ins (extra nginx servers that answer their own index) so that hundreds of requests cost
milliseconds."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from simulator.cluster.nginx_config import Runtime, render
from simulator.cluster.supervisor import free_ports
from simulator.domain.placement import owner
from tests.cluster.cluster import call, needs_nginx, nginx_binary

pytestmark = needs_nginx
WORKERS = 5


class Proxy:
    def __init__(self, url: str, workers: int) -> None:
        self.url, self.workers = url, workers

    def route(
        self, method: str, path: str, key: str | None = None, body: Any = None
    ) -> tuple[str, int]:
        """(the namespace nginx read, the index of the worker it chose)."""
        response = call(self.url, method, path, key, body)
        assert response.status == 200, response.body
        return response.headers["x-payorch-namespace"], int(response.body)


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    directory = tmp_path_factory.mktemp("nginx")
    directory.chmod(0o711)
    runtime = Runtime(directory)
    port, *ports = free_ports("127.0.0.1", WORKERS + 1)
    text = render([f"127.0.0.1:{p}" for p in ports], f"127.0.0.1:{port}", runtime=runtime)
    # For the test only: the namespace nginx read, in a header; and the stand-in workers.
    listen = f"        listen 127.0.0.1:{port};\n"
    assert listen in text
    text = text.replace(
        listen, listen + "        add_header X-Payorch-Namespace $payorch_namespace always;\n"
    )
    stand_ins = "".join(
        f"    server {{ listen 127.0.0.1:{p}; location / {{ return 200 '{i}'; }} }}\n"
        for i, p in enumerate(ports)
    )
    text = text.rstrip().removesuffix("}") + stand_ins + "}\n"
    runtime.config.write_text(text)
    nginx = nginx_binary()
    assert nginx is not None
    process = subprocess.Popen(
        runtime.command(nginx),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for(port, process, runtime)
        yield Proxy(f"http://127.0.0.1:{port}", WORKERS)
    finally:
        process.terminate()
        process.wait(timeout=10)


def _wait_for(port: int, process: subprocess.Popen[bytes], runtime: Runtime) -> None:
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if process.poll() is not None:
                raise AssertionError(runtime.error_log.read_text()) from None
            time.sleep(0.01)


def test_nginx_picks_the_worker_python_computes_for_many_names(proxy: Proxy) -> None:
    names = ["default", *(f"ns-{i}" for i in range(400)), "a", "z9", "ci-" + "x" * 37]
    chosen = {name: proxy.route("GET", f"/ns/{name}/api/v1/ping") for name in names}
    assert {name: read for name, (read, _) in chosen.items()} == {n: n for n in names}
    assert {name: index for name, (_, index) in chosen.items()} == {
        name: owner(name, WORKERS) for name in names
    }
    assert len({index for _, index in chosen.values()}) == WORKERS  # every worker used


@pytest.mark.parametrize(
    ("method", "path", "key", "body", "namespace"),
    [
        ("GET", "/api/v1/ping", None, None, "default"),
        ("GET", "/api/v1/ping", "sk_test_19g744zrbw5buqxqpxp5w4gj", None, "default"),
        ("GET", "/api/v1/ping", "sk_test_ns_shop-1_abc", None, "shop-1"),
        ("GET", "/api/v1/ping", "pk_test_ns_shop-1_abc", None, "shop-1"),
        ("GET", "/api/v1/me", "sk_live_ns_shop-2_abc", None, "shop-2"),
        ("GET", "/api/v1/me", "ns_tok-1_eyJhbGciOi", None, "tok-1"),  # access token
        ("GET", "/api/v1/me", "rt_ns_rt-1_abc", None, "rt-1"),  # refresh token (401s there)
        ("GET", "/api/v1/me", "eyJhbGciOi", None, "default"),  # default's access token
        ("GET", "/ns/pre-1", None, None, "pre-1"),
        ("GET", "/ns/pre-1?x=1", None, None, "pre-1"),
        ("GET", "/ns/pre-1/checkout/tok_abc", None, None, "pre-1"),
        ("GET", "/ns/pre-1/c/tx_1/status", None, None, "pre-1"),
        ("POST", "/ns/pre-1/_sim/provider/tx_1/approve", None, None, "pre-1"),
        # The path prefix wins over a credential (the namespace then refuses a foreign one).
        ("GET", "/ns/pre-1/api/v1/ping", "sk_test_ns_other_abc", None, "pre-1"),
        ("GET", "/ns/Bad/api/v1/ping", "sk_test_ns_other_abc", None, "other"),
        ("GET", "/_sim/events", "sk_test_ns_ev-1_abc", None, "ev-1"),
        ("GET", "/ns/ev-2/_sim/requests/stream", None, None, "ev-2"),
        # Managing a namespace goes to its owner, whoever asks and under whatever prefix.
        ("PUT", "/_sim/namespaces/made-1", "sk_test_19g744zrbw5buqxqpxp5w4gj", None, "made-1"),
        ("DELETE", "/_sim/namespaces/made-1", "sk_test_ns_other_abc", None, "made-1"),
        ("GET", "/ns/other/_sim/namespaces/made-1?x", None, None, "made-1"),
        ("GET", "/_sim/namespaces", "sk_test_19g744zrbw5buqxqpxp5w4gj", None, "default"),
        ("GET", "/_sim/namespaces", "sk_test_ns_mine_abc", None, "mine"),
        # POST /auth/token and /auth/refresh: the credential is in the body.
        ("POST", "/api/v1/auth/token", None, {"apiKey": "pk_test_ns_tk_1", "secretKey": "x"}, "tk"),
        ("POST", "/api/v1/auth/token", None, {"secretKey": "sk_test_ns_tk2_1"}, "tk2"),
        ("POST", "/api/v1/auth/refresh", None, {"refreshToken": "rt_ns_rf-1_abc"}, "rf-1"),
        ("POST", "/api/v1/auth/refresh?x=1", None, {"refreshToken": "rt_ns_rf-2_ab"}, "rf-2"),
        ("POST", "/api/v1/auth/token", None, {"apiKey": "pk_test_abc"}, "default"),
        ("POST", "/api/v1/payments", None, {"refreshToken": "rt_ns_rf-1_abc"}, "default"),
        (
            "POST",
            "/api/v1/auth/token",
            None,
            {"padding": "x" * 600_000, "k": "sk_test_ns_big_1"},
            "big",
        ),
    ],
)
def test_every_way_a_request_names_its_namespace(
    proxy: Proxy, method: str, path: str, key: str | None, body: Any, namespace: str
) -> None:
    assert proxy.route(method, path, key, body) == (namespace, owner(namespace, WORKERS))


def test_the_configuration_is_generated_from_the_routing_rule() -> None:
    from simulator.domain import namespaces

    text = render(["10.0.0.1:8081"], "8080")
    for rule in (
        namespaces.NAME_RULE,
        namespaces.AUTHORIZATION_RULE,
        namespaces.BODY_CREDENTIAL_RULE,
    ):
        assert rule in text
    assert "hash $payorch_namespace;" in text and "max_fails=0" in text


def test_a_worker_that_is_down_is_503_in_the_error_envelope(tmp_path: Path) -> None:
    """nginx's own answer when the owner refuses connections (no stand-in listens there)."""
    tmp_path.chmod(0o711)
    runtime = Runtime(tmp_path)
    port, dead = free_ports("127.0.0.1", 2)
    runtime.config.write_text(render([f"127.0.0.1:{dead}"], f"127.0.0.1:{port}", runtime=runtime))
    nginx = nginx_binary()
    assert nginx is not None
    process = subprocess.Popen(
        runtime.command(nginx),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for(port, process, runtime)
        response = call(f"http://127.0.0.1:{port}", "POST", "/api/v1/payments", None, {})
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert response.status == 503
    assert response.headers["retry-after"] == "1"
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert error["code"] == "service_unavailable" and error["type"] == "api_error"
    assert error["requestId"] == response.headers["x-request-id"]
    assert error["requestId"].startswith("req_") and len(error["requestId"]) == 36
