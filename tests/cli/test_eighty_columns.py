"""Every human list and view at 80 columns (issue 36 item 5), against a server holding what a
first week makes: long order ids, a PIX code, a boleto barcode, a checkout URL, a payout that
failed, a namespace with the longest name and its longer keys, a saved state, an incident.

For each command: no line over 80 columns, save a line that is one copyable value too long for
any line (a PIX code: the terminal soft-wraps it and a copy takes it whole); no trailing spaces;
and every id and long value appears whole on one line (they were folded mid-token)."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from payorch_cli.main import app
from payorch_cli.scenario.fixture import Payorch
from tests.cli.test_simulate import deposit_clabe

runner = CliRunner()
WIDTH = 80
NAMESPACE = "ci-long-namespace-name-of-forty-chars-01"  # the longest the rule allows
STATE = "before-the-long-checkout-journey-2026"
RETURN_URL = "https://shop.example.com/return/after/payment/with/a/long/path?order=42&x=1"


assert len(NAMESPACE) == 40


def _pay(payorch: Payorch, body: dict[str, Any]) -> dict[str, Any]:
    paid: dict[str, Any] = payorch.client.post("/payments", body)
    return paid


def _payments(payorch: Payorch) -> list[dict[str, Any]]:
    """A PIX, a boleto, a hosted checkout and a cash voucher, each with a long order id."""
    buyer = {"userName": "Ana Souza", "userEmail": "ana.souza@example.com"}
    return [
        _pay(
            payorch,
            {
                "amount": 125.5,
                "currency": "BRL",
                "paymentMethodId": "1006",
                "documentId": "52998224725",
                "merchantOrderId": "order-2026-11-28-very-long-reference-0001",
                **buyer,
            },
        ),
        _pay(
            payorch,
            {
                "amount": 300,
                "currency": "BRL",
                "paymentMethodId": "1007",
                "documentId": "52998224725",
                "merchantOrderId": "boleto-order-2026-000000000000002",
                **buyer,
            },
        ),
        _pay(
            payorch,
            {
                "amount": 99.9,
                "paymentMethodId": "1025",
                "documentId": "123456789",
                "hostedCheckout": True,
                "returnUrl": RETURN_URL,
                "merchantOrderId": "checkout-order-with-a-long-reference-3",
                **buyer,
            },
        ),
        _pay(
            payorch,
            {"amount": 50, "currency": "MXN", "paymentMethodId": "1002", **buyer},
        ),
    ]


def _long_values(payment: dict[str, Any]) -> list[str]:
    """What a person copies out of a payment: its id, order id, code, barcode, URLs."""
    data = payment.get("paymentData") or {}
    found = [payment["transactionId"], payment.get("merchantOrderId")]
    found += [data.get("qrCode"), data.get("barcode")]
    found += [payment.get("checkoutUrl"), payment.get("paymentFormUrl")]
    return [value for value in found if value]


def _payouts(payorch: Payorch) -> list[dict[str, Any]]:
    payorch.client.post("/me/payout/fund-sandbox", {"currency": "USD", "amount": 100})
    body = {
        "methodId": "po_us_email_wallet",
        "amount": 10,
        "recipient": {"name": "Jane Doe", "account": "jane@example.com", "documentId": "P1234567"},
    }
    sent = [payorch.client.post("/me/payout/send", body)["payout"] for _ in range(2)]
    payorch.client.post(f"/me/payout/send/{sent[1]['id']}/simulate", {"action": "failed"})
    return sent


def _world(payorch: Payorch) -> list[tuple[list[str], list[str]]]:
    """Each command to run, and the values its output must hold whole on one line."""
    payments = _payments(payorch)
    payouts = _payouts(payorch)
    clabe = deposit_clabe(payorch)
    incident = payorch.client.post(
        "/_sim/providers/prv_stp_mx/incidents", {"behaviour": "outage", "durationSeconds": 600}
    )
    created = payorch.client.namespace_call("PUT", NAMESPACE)
    keys = [k for row in created["keys"] for k in (row["publishableKey"], row["secretKey"]) if k]
    saved = payorch.client.post("/_sim/state", {"name": STATE})
    pix = payments[0]["transactionId"]
    commands: list[tuple[list[str], list[str]]] = [
        (["payments", "list"], [p["transactionId"] for p in payments]),
        *((["payments", "get", p["transactionId"]], _long_values(p)) for p in payments),
        (["payouts", "list"], [p["id"] for p in payouts]),
        *((["payouts", "get", p["id"]], [p["id"]]) for p in payouts),
        (["simulate", "deposit", "--clabe", clabe, "--amount", "250"], [clabe]),
        (["balance"], []),
        (["keys"], []),
        (["ns", "show", NAMESPACE], [NAMESPACE, *keys]),
        (["ns", "list"], [NAMESPACE]),
        (["state", "list"], [STATE, saved["createdAt"][:19].replace("T", " ")]),
        (["coverage"], ["POST /payments/{id}/refund"]),
        (["providers"], ["prv_stp_mx", incident["id"]]),
        (["providers", "show", "prv_stp_mx"], [incident["id"]]),
        (["trace", pix], [pix]),
        (["methods"], ["sbx_spei"]),
        (["trigger", "payment.completed"], ["event payment.completed"]),
        (["providers", "reset"], []),
        # A message (a string, not a view) is wrapped at words, its values whole.
        (["state", "restore", STATE], [STATE]),
        (["reset"], [payorch.base_url]),
    ]
    return commands


def _copyable_alone(line: str, wholes: list[str]) -> bool:
    """A line past the width is allowed only as one value longer than any line could hold."""
    return line.strip() in wholes and len(line.strip()) > WIDTH - 4


def test_every_list_and_view_fits_80_columns_with_whole_values(payorch: Payorch) -> None:
    checked = 0
    for args, wholes in _world(payorch):
        result = runner.invoke(
            app, ["--base-url", payorch.base_url, *args], env={"COLUMNS": str(WIDTH)}
        )
        assert result.exit_code == 0, (args, result.output)
        lines = result.stdout.splitlines()
        assert lines, args
        for line in lines:
            assert line == line.rstrip(), (args, f"trailing spaces: {line!r}")
            assert len(line) <= WIDTH or _copyable_alone(line, wholes), (args, line)
        for value in wholes:
            assert any(value in line for line in lines), (args, value, result.stdout)
        checked += 1
    assert checked >= 20


@pytest.mark.parametrize("width", [60, 120])
def test_a_pix_payment_keeps_its_code_whole_at_any_width(payorch: Payorch, width: int) -> None:
    [pix, *_] = _payments(payorch)
    code = pix["paymentData"]["qrCode"]
    result = runner.invoke(
        app,
        ["--base-url", payorch.base_url, "payments", "get", pix["transactionId"]],
        env={"COLUMNS": str(width)},
    )
    assert result.exit_code == 0, result.output
    [line] = [line for line in result.stdout.splitlines() if code[:20] in line]
    assert code in line
    # The few things a person acts on; the rest is one --json away.
    assert "settlement" not in result.stdout.split("--json")[0]
    assert result.stdout.rstrip().endswith("--json for every field (fees, settlement, tags)")


def test_views_hold_no_raw_json_and_no_empty_fields(payorch: Payorch) -> None:
    """`fees {"platform": ...}` inside a table and `pdfReady False` beside `pdfReadyAt null`:
    a view flattens what is nested, leaves out what is empty and says where the rest is."""
    payments = _payments(payorch)
    [payout, _] = _payouts(payorch)
    runs = [
        ["payments", "get", payments[0]["transactionId"]],
        ["payouts", "get", payout["id"]],
        ["trigger", "settlement.pdf_ready", "--advance-clock"],
        ["balance"],
    ]
    for args in runs:
        result = runner.invoke(app, ["--base-url", payorch.base_url, *args])
        assert result.exit_code == 0, (args, result.output)
        for raw in ("{", "}", "null", "None", "False", "True"):
            assert raw not in result.stdout, (args, raw, result.stdout)
        assert "--json" in result.stdout, args
