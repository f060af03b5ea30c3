"""`payorch payouts send`: a payout from the command line (POST /me/payout/send), the recipient
from named options, `-d recipient[KEY]=VALUE` and `--data`, an idempotency key, `--json`
(issue 36 item 10). Through CliRunner against an in-process simulator."""

from __future__ import annotations

import json
from typing import Any

from typer.testing import CliRunner

from payorch_cli.commands.trigger import SPEI_RECIPIENT
from payorch_cli.main import app
from payorch_cli.scenario.fixture import Payorch

runner = CliRunner()
SPEI = [
    "--method-id", "sbx_po_mx_spei",
    "--name", SPEI_RECIPIENT["name"],
    "--account", SPEI_RECIPIENT["account"],
    "--document-type", SPEI_RECIPIENT["documentType"],
    "--document-id", SPEI_RECIPIENT["documentId"],
]  # fmt: skip


def send(payorch: Payorch, *args: str) -> Any:
    return runner.invoke(app, ["--base-url", payorch.base_url, "payouts", "send", *args])


def sent_json(payorch: Payorch, *args: str) -> dict[str, Any]:
    result = send(payorch, "--json", *args)
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert isinstance(answer, dict)
    return answer


def last_body(payorch: Payorch) -> dict[str, Any]:
    """What the CLI sent, as the server's request log kept it: amounts as sent, the recipient's
    name and document masked."""
    query = {"path": "/me/payout/send", "method": "POST", "limit": 1}
    row = payorch.client.request("GET", "/_sim/requests", query=query)["data"][0]
    body = payorch.client.get(f"/_sim/requests/{row['id']}")["request"]["body"]["body"]
    assert isinstance(body, dict)
    return body


def test_send_builds_the_recipient_from_options_and_fields(payorch: Payorch) -> None:
    answer = sent_json(payorch, *SPEI, "--amount", "150", "-d", "recipient[email]=ana@example.com")
    payout = answer["payout"]
    assert payout["id"].startswith("po_") and payout["status"] == "processing"
    assert payout["amount"] == 150 and payout["currency"] == "MXN"
    stored = payorch.client.get(f"/me/payout/send/{payout['id']}")["payout"]
    assert stored["id"] == payout["id"]
    body = last_body(payorch)
    recipient = body["recipient"]
    assert set(recipient) == {*SPEI_RECIPIENT, "email"}
    assert (recipient["account"], recipient["documentType"]) == ("012180001183597198", "RFC")
    assert body["amount"] == 150 and isinstance(body["amount"], int)


def test_named_options_win_over_data(payorch: Payorch) -> None:
    recipient = {**SPEI_RECIPIENT, "account": "000000000000000000"}
    data = json.dumps({"methodId": "sbx_po_mx_spei", "amount": 5, "recipient": recipient})
    answer = sent_json(payorch, "--data", data, "--account", SPEI_RECIPIENT["account"],
                       "--amount", "70.5")  # fmt: skip
    assert answer["payout"]["amount"] == 70.5
    sent = last_body(payorch)
    assert set(sent["recipient"]) == set(SPEI_RECIPIENT)
    assert sent["recipient"]["account"] == SPEI_RECIPIENT["account"]


def test_an_idempotency_key_pays_once(payorch: Payorch) -> None:
    first = sent_json(payorch, *SPEI, "--amount", "200", "--idempotency-key", "po-k-1")
    again = sent_json(payorch, *SPEI, "--amount", "200", "--idempotency-key", "po-k-1")
    assert again["payout"]["id"] == first["payout"]["id"]
    assert len(payorch.client.get("/me/payout/send")["data"]) == 1
    other = send(payorch, *SPEI, "--amount", "201", "--idempotency-key", "po-k-1")
    assert other.exit_code == 1 and "idempotency_conflict" in other.stderr


def test_human_output_and_a_refusal_in_one_line(payorch: Payorch) -> None:
    human = send(payorch, *SPEI, "--amount", "300")
    assert human.exit_code == 0, human.output
    payout_id = payorch.client.get("/me/payout/send")["data"][0]["id"]
    assert f"payout {payout_id}" in human.stdout and "processing" in human.stdout
    missing = send(payorch, "--method-id", "sbx_po_mx_spei", "--amount", "300")
    assert missing.exit_code == 1 and len(missing.stderr.splitlines()) == 1
    assert missing.stderr.startswith("payorch payouts send: ")


def test_a_bad_amount_is_exit_2_before_anything_is_sent() -> None:
    result = runner.invoke(
        app, ["--base-url", "http://127.0.0.1:9", "payouts", "send", *SPEI, "--amount", "ten"]
    )
    assert result.exit_code == 2 and "'ten' is not an amount" in result.output
