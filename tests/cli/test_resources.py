"""`payorch payments create|get|list|refund`, `payorch payouts list|get`, `payorch balance`:
through CliRunner against an in-process simulator (the `payorch` fixture)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from payorch_cli.commands.trigger import SPEI_RECIPIENT
from payorch_cli.main import app
from payorch_cli.scenario.fixture import Payorch

runner = CliRunner()


def run(payorch: Payorch, *args: str, key: str | None = None) -> Any:
    base = ["--base-url", payorch.base_url]
    if key is not None:
        base += ["--api-key", key]
    return runner.invoke(app, [*base, *args])


def run_json(payorch: Payorch, *args: str) -> Any:
    result = run(payorch, "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_create_sends_named_options_fields_and_data(payorch: Payorch) -> None:
    created = run_json(
        payorch,
        "payments",
        "create",
        "--amount",
        "25.50",
        "--method",
        "1001",
        "--merchant-order-id",
        "order-7",
        "--user-name",
        "Ana López",
        "--user-email",
        "ana@example.com",
        "-d",
        "tag1=blue",
        "-d",
        'tag2:="x"',
        "--data",
        '{"tag3": "from-data", "tag1": "overridden"}',
    )
    assert created["transactionId"].startswith("TXN-") and created["status"] == "pending"
    assert created["amount"] == 25.5
    assert (created["tag1"], created["tag2"], created["tag3"]) == ("blue", "x", "from-data")
    stored = payorch.client.get(f"/payments/{created['transactionId']}")
    assert stored["merchantOrderId"] == "order-7"


def test_create_human_output_names_the_payment(payorch: Payorch) -> None:
    result = run(payorch, "payments", "create", "--amount", "10", "--method", "1001")
    assert result.exit_code == 0, result.output
    assert "payment TXN-" in result.stdout and "pending" in result.stdout


def test_idempotency_key_replays_the_same_payment(payorch: Payorch) -> None:
    args = ["payments", "create", "--amount", "10", "--method", "1001"]
    first = run_json(payorch, *args, "--idempotency-key", "k-1")
    again = run_json(payorch, *args, "--idempotency-key", "k-1")
    assert again["transactionId"] == first["transactionId"]
    other = run(payorch, "payments", "create", "--amount", "11", "--method", "1001",
                "--idempotency-key", "k-1")  # fmt: skip
    assert other.exit_code == 1 and "idempotency_conflict" in other.stderr
    assert payorch.client.get("/payments")["pagination"]["total"] == 1


def test_simulate_sends_the_sandbox_simulate_header(payorch: Payorch) -> None:
    created = run_json(
        payorch, "payments", "create", "--amount", "10", "--method", "1001", "--simulate", "paid"
    )
    payorch.advance("1m")
    event = payorch.events.wait_for("payment.completed", {"data": {"id": created["transactionId"]}})
    assert event["data"]["status"] == "completed"


def test_get_list_and_refund(payorch: Payorch) -> None:
    ids = []
    for order in ("a", "b", "c"):
        tx = payorch.client.post(
            "/payments", {"amount": 20, "paymentMethodId": "1001", "merchantOrderId": order}
        )
        ids.append(tx["transactionId"])
    payorch.client.post(f"/payments/{ids[0]}/simulate", {"action": "paid"})

    got = run_json(payorch, "payments", "get", ids[0])
    assert got["id"] == ids[0] and got["status"] == "completed"

    page = run_json(payorch, "payments", "list", "--limit", "2")
    assert [row["id"] for row in page["data"]] == ids[::-1][:2]
    assert page["pagination"]["total"] == 3
    completed = run_json(payorch, "payments", "list", "--status", "completed")
    assert [row["id"] for row in completed["data"]] == [ids[0]]
    by_order = run_json(payorch, "payments", "list", "--merchant-order-id", "b")
    assert [row["id"] for row in by_order["data"]] == [ids[1]]

    table = run(payorch, "payments", "list", "--limit", "2")
    assert table.exit_code == 0, table.output
    assert ids[2] in table.stdout and "2 of 3 payments (offset 0, page 1 of 2)" in table.stdout

    payorch.advance("10d")  # the paid payment settles: a refund needs available money
    refunded = run_json(
        payorch, "payments", "refund", ids[0], "--amount", "5", "--reason", "duplicate"
    )
    assert refunded["refundId"].startswith("CLM-") and refunded["transactionId"] == ids[0]
    assert refunded["amount"] == 5 and refunded["reason"] == "duplicate"


def test_api_errors_are_one_line_and_exit_1(payorch: Payorch) -> None:
    missing = run(payorch, "payments", "get", "TXN-NOPE")
    assert missing.exit_code == 1 and missing.stdout == ""
    [line] = missing.stderr.splitlines()
    assert line.startswith("payorch payments get: transaction_not_found: ")
    assert "(request req_" in line

    refused = run(payorch, "payments", "refund", "TXN-NOPE")
    assert refused.exit_code == 1 and "transaction_not_found" in refused.stderr

    bad = run(payorch, "payments", "create", "--method", "1001")  # no amount: the API says so
    assert bad.exit_code == 1 and len(bad.stderr.splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["-d", "amount"], "is not key=value"),
        (["-d", "amount:=1e"], "the value of amount is not JSON"),
        (["--data", "[1]"], "--data must be a JSON object"),
        (["--data", "{"], "--data is not JSON"),
        (["--data", "[" * 5000], "nests deeper than"),
        (["--simulate", "paidd"], "'paidd' is not one of"),
        (["--amount", "ten"], "'ten' is not an amount"),
    ],
)
def test_bad_arguments_exit_2_and_send_nothing(args: list[str], words: str) -> None:
    # No server: anything sent would be exit 3, not 2.
    result = runner.invoke(app, ["--base-url", "http://127.0.0.1:9", "payments", "create", *args])
    assert result.exit_code == 2, result.output
    assert words in result.output and "Traceback" not in result.output


def test_nested_fields_build_objects() -> None:
    from payorch_cli.body import build

    body = build(
        {"recipient": {"name": "x"}},
        ["recipient[account]=0121", "recipient[name]=Ana", "metadata[a][b]:=1"],
        {"amount": 3.0, "currency": None},
    )
    assert body == {
        "recipient": {"name": "Ana", "account": "0121"},
        "metadata": {"a": {"b": 1}},
        "amount": 3.0,
    }


def test_an_unreachable_server_exits_3() -> None:
    result = runner.invoke(app, ["--base-url", "http://127.0.0.1:9", "balance"])
    assert result.exit_code == 3 and "cannot reach http://127.0.0.1:9" in result.stderr


def test_payouts_list_and_get(payorch: Payorch) -> None:
    sent = []
    for _ in range(2):
        answer = payorch.client.post(
            "/me/payout/send",
            {"methodId": "sbx_po_mx_spei", "amount": 100, "recipient": SPEI_RECIPIENT},
        )
        sent.append(answer["payout"]["id"])
    payorch.client.post(f"/me/payout/send/{sent[0]}/simulate", {"action": "rejected"})

    page = run_json(payorch, "payouts", "list")
    assert {row["id"] for row in page["data"]} == set(sent)
    failed = run_json(payorch, "payouts", "list", "--status", "failed")
    assert [row["id"] for row in failed["data"]] == [sent[0]]
    got = run_json(payorch, "payouts", "get", sent[0])
    assert got["payout"]["failureReason"] == "rejected_by_beneficiary_bank"

    table = run(payorch, "payouts", "list")
    assert table.exit_code == 0 and sent[1] in table.stdout and "2 of 2 payouts" in table.stdout
    human = run(payorch, "payouts", "get", sent[0])
    assert f"payout {sent[0]}" in human.stdout and "rejected_by_beneficiary_bank" in human.stdout

    missing = run(payorch, "payouts", "get", "po_nope")
    assert missing.exit_code == 1 and len(missing.stderr.splitlines()) == 1


def test_balance(payorch: Payorch) -> None:
    tx = payorch.client.post("/payments", {"amount": 40, "paymentMethodId": "1001"})
    payorch.client.post(f"/payments/{tx['transactionId']}/simulate", {"action": "paid"})
    answer = run_json(payorch, "balance")
    assert answer == payorch.client.get("/me/balance")
    human = run(payorch, "balance")
    assert human.exit_code == 0, human.output
    assert "available" in human.stdout and "pending" in human.stdout and "USD" in human.stdout

    payorch.client.post("/me/payout/fund-sandbox", {"currency": "MXN", "amount": 500})
    payout = run_json(payorch, "balance", "--payout")
    assert any(entry["currency"] == "MXN" for entry in payout["balances"])
    table = run(payorch, "balance", "--payout")
    assert "payout balances" in table.stdout and "MXN" in table.stdout


def test_a_publishable_key_gets_the_api_error(payorch: Payorch) -> None:
    publishable = payorch.keys.resolve("shp_mazul_tienda/sandbox/publishable").key
    assert publishable and publishable.startswith("pk_test_")
    result = run(payorch, "payments", "list", key=publishable)
    assert result.exit_code == 1 and "key_kind_not_allowed" in result.stderr


def test_a_whole_amount_is_sent_as_written() -> None:
    """`--amount 10` sends the JSON integer 10 (it sent 10.0); `--amount 12.50` sends 12.5."""
    import re
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    bodies: list[bytes] = []

    class Recorder(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            bodies.append(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            answer = b'{"transactionId":"TXN-1","status":"pending"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        for written in ("10", "12.50"):
            result = runner.invoke(
                app, ["--base-url", url, "--json", "payments", "create", "--amount", written,
                      "--method", "1001"],
            )  # fmt: skip
            assert result.exit_code == 0, result.output
    finally:
        server.shutdown()
    sent = [re.search(rb'"amount": ?([0-9.]+)', body) for body in bodies]
    assert [m.group(1) if m else None for m in sent] == [b"10", b"12.5"], bodies
