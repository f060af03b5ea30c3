"""`payorch trace ID [--json]`: a payment's or payout's cascade trace as a timeline or JSON."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from payorch_cli.main import app
from payorch_cli.render.trace import entry_details, trace_path
from payorch_cli.scenario.fixture import Payorch

runner = CliRunner()


def test_a_production_failover_as_a_timeline_and_as_json(payorch: Payorch) -> None:
    live = payorch.as_("shp_mazul_tienda/production")
    tx = live.post("/payments", {"amount": 50, "paymentMethodId": "1004"})
    base = ["--base-url", payorch.base_url]
    shown = runner.invoke(app, [*base, "trace", tx["transactionId"]], env={"COLUMNS": "160"})
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert f"Trace of payment {tx['transactionId']} (production)" in lines[0]
    attempts = [line for line in lines if "routing_attempt" in line]
    assert "prv_orbita_cards  outcome=unavailable" in attempts[0]
    assert "prv_cardhub  outcome=accepted" in attempts[1]
    assert any("provider_chosen" in line and "prv_cardhub" in line for line in lines)

    as_json = runner.invoke(app, [*base, "--json", "trace", tx["transactionId"]])
    assert as_json.exit_code == 0, as_json.output
    doc = json.loads(as_json.stdout)
    assert doc["id"] == tx["transactionId"] and doc["environment"] == "production"
    assert [e["kind"] for e in doc["entries"]][:3] == [
        "created",
        "routing_attempt",
        "routing_attempt",
    ]
    # Amounts are JSON numbers, as in every answer of the API (they were strings).
    created = doc["entries"][0]
    assert (created["amount"], created["currencyLocal"]) == (50, "MXN")
    assert isinstance(created["amountLocal"], int | float)


def test_a_payout_id_reads_the_payout_trace(payorch: Payorch) -> None:
    payorch.client.post("/me/payout/fund-sandbox", {"currency": "USD", "amount": 100})
    body = {"methodId": "po_us_email_wallet", "amount": 10}
    body["recipient"] = {
        "name": "Jane Doe",
        "account": "jane@example.com",
        "documentId": "P1234567",
    }
    payout = payorch.client.post("/me/payout/send", body)["payout"]
    result = runner.invoke(app, ["--base-url", payorch.base_url, "--json", "trace", payout["id"]])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["subject"] == "payout" and doc["entries"][0]["kind"] == "created"
    assert doc["entries"][0]["amount"] == 10


def test_an_unknown_id_is_an_api_error(payorch: Payorch) -> None:
    result = runner.invoke(app, ["--base-url", payorch.base_url, "trace", "TXN-NOSUCHTHING"])
    assert result.exit_code == 1
    assert "transaction_not_found" in result.stderr


def test_the_summary_of_each_kind() -> None:
    assert trace_path("TXN-ABC") == "/_sim/payments/TXN-ABC/trace"
    assert trace_path("po_1/x") == "/_sim/payouts/po_1%2Fx/trace"
    change = {"at": "t", "kind": "status_changed", "from": "pending", "to": "completed"}
    assert entry_details({**change, "cause": "poll"}) == "pending → completed  (poll)"
    delivery = {
        "at": "t",
        "kind": "delivery",
        "result": "failed",
        "httpStatus": 500,
        "error": None,
        "attempt": 1,
        "url": "http://127.0.0.1:9/hooks",
        "eventId": "evt_1",
        "deliveryId": "dlv_1",
    }
    assert entry_details(delivery) == (
        "result=failed  httpStatus=500  attempt=1  url=http://127.0.0.1:9/hooks  eventId=evt_1"
    )
