"""`payorch simulate payment|payout ID ACTION` and `payorch simulate deposit`."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from payorch_cli.commands.trigger import SPEI_RECIPIENT
from payorch_cli.main import app
from payorch_cli.scenario.fixture import Payorch

runner = CliRunner()


def test_simulate_payment(payorch: Payorch) -> None:
    tx = payorch.client.post("/payments", {"amount": 20, "paymentMethodId": "1001"})
    result = runner.invoke(
        app,
        [
            "--base-url",
            payorch.base_url,
            "--json",
            "simulate",
            "payment",
            tx["transactionId"],
            "paid",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "id": tx["transactionId"],
        "status": "completed",
        "eventsFired": ["payment.completed", "payment.captured"],
    }
    again = runner.invoke(
        app, ["--base-url", payorch.base_url, "simulate", "payment", tx["transactionId"], "paid"]
    )
    assert again.exit_code == 1 and "invalid_request: " in again.stderr


def test_simulate_payment_human_output(payorch: Payorch) -> None:
    tx = payorch.client.post("/payments", {"amount": 20, "paymentMethodId": "1001"})
    result = runner.invoke(
        app, ["--base-url", payorch.base_url, "simulate", "payment", tx["transactionId"], "failed"]
    )
    assert result.exit_code == 0
    assert "status" in result.stdout and "failed" in result.stdout


def test_an_unknown_action_is_a_usage_error() -> None:
    result = runner.invoke(app, ["simulate", "payment", "TXN-1", "paidd"])
    assert result.exit_code == 2 and "paidd" in result.output


def test_simulate_payout(payorch: Payorch) -> None:
    sent = payorch.client.post(
        "/me/payout/send",
        {"methodId": "sbx_po_mx_spei", "amount": 100, "recipient": SPEI_RECIPIENT},
    )
    payout_id = sent["payout"]["id"]
    base = ["--base-url", payorch.base_url, "--json", "simulate", "payout", payout_id]
    result = runner.invoke(app, [*base, "rejected"])
    assert result.exit_code == 0, result.output
    payout = json.loads(result.stdout)["payout"]
    assert payout["status"] == "failed"
    assert payout["failureReason"] == "rejected_by_beneficiary_bank"
    event = payorch.events.wait_for("payout.failed", {"data": {"id": payout_id}})
    assert event["data"]["failureReason"] == "rejected_by_beneficiary_bank"
    assert runner.invoke(app, [*base, "completed"]).exit_code == 1  # no longer processing


def deposit_clabe(payorch: Payorch) -> str:
    """The CLABE of a new deposit account (the first deposit method) for an end user."""
    [method] = payorch.client.get("/me/deposit-methods")["methods"][:1]
    account = payorch.client.post(
        "/me/deposit-accounts",
        {
            "endUserRef": "u1",
            "name": "Ana López",
            "email": "ana@example.com",
            "phone": "+525512345678",
            "depositMethodId": method["depositMethodId"],
        },
    )["account"]
    return str(account["clabe"])


def test_simulate_deposit(payorch: Payorch) -> None:
    clabe = deposit_clabe(payorch)
    result = runner.invoke(
        app,
        [
            "--base-url",
            payorch.base_url,
            "--json",
            "simulate",
            "deposit",
            "--clabe",
            clabe,
            "--amount",
            "250",
            "--payer-name",
            "Carlos Pérez",
        ],
    )
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["transaction"]["status"] == "completed"
    assert body["deposit"]["payerName"] == "Carlos Pérez"
    human = runner.invoke(
        app,
        [
            "--base-url",
            payorch.base_url,
            "simulate",
            "deposit",
            "--clabe",
            clabe,
            "--amount",
            "10",
        ],
    )
    assert human.exit_code == 0 and "payment TXN-" in human.stdout
    assert f"  clabe      {clabe}" in human.stdout.splitlines()
    wrong = runner.invoke(
        app,
        [
            "--base-url",
            payorch.base_url,
            "simulate",
            "deposit",
            "--clabe",
            "646180000000000009",
            "--amount",
            "10",
        ],
    )
    assert wrong.exit_code == 1 and "deposit_account_not_found: " in wrong.stderr
