"""`payorch serve --workers 2 --egress-deny ...`: every worker gets the egress rules (a real
supervisor, workers and nginx; a listener counting connections)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.cli.test_serve_egress import counting_listener
from tests.cluster.cluster import Cluster, needs_nginx, one_per_worker

pytestmark = needs_nginx


def test_every_worker_holds_deliveries_to_the_rules(tmp_path: Path) -> None:
    listener, connections = counting_listener()
    port = listener.getsockname()[1]
    cluster = Cluster(tmp_path / "data", 2, "--egress-deny", "metadata.example")
    try:
        subs = []
        for space in one_per_worker(cluster, "egress"):
            url = f"http://127.0.0.1:{port}/h"
            made = cluster.call("POST", "/api/v1/webhooks", space.sk, {"url": url, "events": "*"})
            assert made.status == 201, made.body
            paid = cluster.call(
                "POST", "/api/v1/payments", space.sk, {"amount": 50, "paymentMethodId": "1001"}
            )
            assert paid.status == 200, paid.body
            tx = paid.json()["transactionId"]
            cluster.call("POST", f"/api/v1/payments/{tx}/simulate", space.sk, {"action": "paid"})
            subs.append((space, made.json()["id"]))
        for space, sub_id in subs:
            rows: list[Any] = []
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                page = cluster.call("GET", f"/api/v1/webhooks/{sub_id}/deliveries", space.sk)
                rows = page.json()["data"]
                if rows and all(row["status"] != "pending" for row in rows):
                    break
                time.sleep(0.1)
            assert rows and {row["status"] for row in rows} == {"failed"}, rows
            for row in rows:
                error = row["attempts"][0]["error"]
                assert error == "refused by the egress policy: 127.0.0.1 (loopback)", error
        assert connections[0] == 0
    finally:
        cluster.kill()
        listener.close()
