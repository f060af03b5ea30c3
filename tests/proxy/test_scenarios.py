"""The repository's scenarios through `payorch proxy` (issue 35): every one passes unchanged with
the proxy in front of the server, and the scenario the proxy writes of that traffic replays green
against a fresh `payorch serve`."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.proxy.conftest import PAYORCH, Running, serve

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
# Left out of the replay: their trace reads list the deliveries to the scenario runner's own
# receiver, which the proxy never sees (docs/decisions.md, "payorch proxy").
NOT_REPLAYED = "not trace and not reconciliation"


def scenario_run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PAYORCH, "scenario", "run", *args], capture_output=True, text=True, timeout=600
    )


@pytest.mark.long(9)
def test_every_scenario_passes_through_the_proxy(proxied: Callable[..., Running]) -> None:
    proxy = proxied()
    # `--namespace auto`: each scenario in a namespace of its own, the isolated ones included.
    done = scenario_run(str(SCENARIOS), "--base-url", proxy.url, "--namespace", "auto")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    summary = done.stdout.strip().splitlines()[-1]
    assert " 0 failed" in summary and "skipped" not in summary, summary
    passed = int(summary.split(" passed")[0].split()[-1])
    files = len(list(SCENARIOS.glob("*.yaml")))
    assert passed >= files, summary  # matrices run more than one instance per file
    assert proxy.stop() == 0


def test_the_proxied_traffic_replays_green_on_a_fresh_server(
    proxied: Callable[..., Running], tmp_path: Path, processes: list[Running]
) -> None:
    proxy = proxied()
    done = scenario_run(str(SCENARIOS), "--base-url", proxy.url, "-k", NOT_REPLAYED)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    assert proxy.stop() == 0
    summary = proxy.stderr.read_text()
    assert "Recorded " in summary and "scenario of " in summary
    scenario = tmp_path / "rec" / "scenario.yaml"
    text = scenario.read_text()
    assert text.count("- request:") > 50
    assert "as: shp_fiesta_taquilla" in text  # another fixture credential, named per step
    assert 'url: "${base_url}/c/' in text  # a page outside /api/v1
    fresh = serve(tmp_path, "fresh")
    processes.append(fresh)
    replay = scenario_run(str(scenario), "--base-url", fresh.url)
    assert replay.returncode == 0, replay.stdout[-4000:] + replay.stderr
    assert "1 passed, 0 failed" in replay.stdout


def test_a_journey_with_webhooks_replays_green_with_its_events(
    proxied: Callable[..., Running], tmp_path: Path, processes: list[Running]
) -> None:
    """The proxy's receiver registered upstream (through the proxy: a step `record` leaves out),
    a payment paid, the clock moved, part refunded, the balance read between: the scenario
    expects the events that came to the receiver, after the calls that caused them."""
    import time

    from tests.proxy.conftest import call_json, records

    proxy = proxied()
    call_json(
        proxy.url,
        "POST",
        "/api/v1/webhooks",
        {"url": proxy.url + "/_proxy/webhooks", "events": "*"},
    )
    call_json(proxy.url, "GET", "/api/v1/me/balance")
    tx = call_json(
        proxy.url,
        "POST",
        "/api/v1/payments",
        {"amount": 100, "paymentMethodId": "sbx_pix", "documentId": "52998224725"},
    )["transactionId"]
    call_json(proxy.url, "POST", f"/api/v1/payments/{tx}/simulate", {"action": "paid"})
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        call_json(proxy.url, "POST", "/_proxy/flush", key=None)
        if sum(1 for r in records(tmp_path / "rec")[1:] if r["kind"] == "webhook") >= 2:
            break
        time.sleep(0.1)
    call_json(proxy.url, "GET", "/api/v1/me/balance")
    call_json(proxy.url, "POST", "/_sim/clock/advance", {"seconds": 172800})
    call_json(proxy.url, "POST", f"/api/v1/payments/{tx}/refund", {"amount": 50})
    call_json(proxy.url, "GET", "/api/v1/me/balance")
    time.sleep(1)
    assert proxy.stop() == 0
    text = (tmp_path / "rec" / "scenario.yaml").read_text()
    assert "expect_event" in text and "payment.completed" in text
    assert tx not in text and "52998224725" not in text
    fresh = serve(tmp_path, "fresh")
    processes.append(fresh)
    replay = scenario_run(str(tmp_path / "rec" / "scenario.yaml"), "--base-url", fresh.url)
    assert replay.returncode == 0, replay.stdout[-4000:] + replay.stderr
