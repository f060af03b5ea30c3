"""`payorch keys` marks the fixtures' trap credentials (issue 36 item 10): a key that
authenticates and then refuses every request (a suspended merchant or shop, a promoted shop's
other environment) has a `trap:` line with what it answers, and each mark is what the server
really answers; a last line says what production keys do differently. --json keeps design.md
1.2's shape."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from payorch_cli.client import ApiError, Client
from payorch_cli.credentials import fixture_rows
from payorch_cli.main import app
from payorch_cli.scenario.fixture import Payorch

runner = CliRunner()
ROWS = fixture_rows()
# The README's "Also in the fixtures" keys: suspended merchant, suspended shop, promoted shop.
TRAPS = {
    "sk_test_gy49nbkm2rolimdkaoix65sz": "403 merchant_suspended",
    "sk_test_oo3axhkvhl7sqdvlhdr8t248": "403 shop_suspended",
    "sk_test_7ajdfcq7gh1s4cswom70ny6u": "403 environment_mismatch",
}


def marks(columns: int) -> dict[str, str]:
    """Each secret key shown, with its trap line ('' when it has none)."""
    result = runner.invoke(app, ["keys"], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(map(len, lines)) <= max(columns, 80)
    found: dict[str, str] = {}
    for number, line in enumerate(lines):
        secret = next((row["secretKey"] for row in ROWS if row["secretKey"] in line), None)
        if secret is None:
            continue
        following = lines[number + 1] if number + 1 < len(lines) else ""
        found[secret] = following.strip() if following.strip().startswith("trap: ") else ""
    return found


@pytest.mark.parametrize("columns", [80, 120])
def test_the_trap_keys_are_marked_and_the_others_are_not(columns: int) -> None:
    found = marks(columns)
    assert set(found) == {row["secretKey"] for row in ROWS}
    for secret, expected in TRAPS.items():
        assert found[secret].startswith(f"trap: {expected}: "), (secret, found[secret])
    assert found["sk_test_19g744zrbw5buqxqpxp5w4gj"] == ""  # the default key
    marked = {secret for secret, mark in found.items() if mark}
    # The suspended shop's and merchant's production keys are traps too; no other key is.
    assert len(marked) == 5 and set(TRAPS) <= marked


def test_production_keys_are_explained_once() -> None:
    out = runner.invoke(app, ["keys"], env={"COLUMNS": "120"}).stdout
    assert out.count("Production keys") == 1 and "Sandbox-Simulate" in out


def test_each_mark_is_what_the_server_answers(payorch: Payorch) -> None:
    found = marks(120)
    for row in ROWS:
        secret = row["secretKey"]
        client = Client(payorch.base_url, secret, tool=None)
        try:
            client.get("/ping")
            answered = ""
        except ApiError as exc:
            answered = f"trap: {exc.status} {exc.code}: "
        assert found[secret].startswith(answered) and bool(found[secret]) == bool(answered), (
            secret,
            found[secret],
            answered,
        )


def test_json_keeps_its_fixed_shape() -> None:
    rows = json.loads(runner.invoke(app, ["keys", "--json"]).stdout)
    fields = {"merchantId", "merchantName", "shopId", "environment", "publishableKey", "secretKey"}
    assert all(set(row) == fields for row in rows)
