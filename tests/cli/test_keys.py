"""`payorch keys` without --json: every key whole at every terminal width (the command exists to
copy keys), as a table where a credential's line fits and one block per credential where not.
(--json and the subprocess runs are in test_serve.py.)"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from payorch_cli.commands.keys import table_width
from payorch_cli.credentials import fixture_rows
from payorch_cli.main import app

runner = CliRunner()
ROWS = fixture_rows()


def shown(columns: int) -> str:
    result = runner.invoke(app, ["keys"], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("columns", [40, 60, 80, 100, 120, 160, 200])
def test_keys_are_never_cut(columns: int) -> None:
    out = shown(columns)
    assert "…" not in out
    words = set(out.split())
    for row in ROWS:
        assert row["secretKey"] in words, (columns, row["secretKey"])
        if row["publishableKey"]:
            assert row["publishableKey"] in words, (columns, row["publishableKey"])
    for row in ROWS:
        assert row["merchantName"] in out and row["merchantId"] in words


def test_a_table_from_120_columns_blocks_below() -> None:
    assert table_width(ROWS) <= 120
    wide, narrow = shown(120), shown(80)
    assert "publishable key" in wide and "secret key" in wide
    first = ROWS[0]
    line = next(line for line in wide.splitlines() if first["secretKey"] in line)
    assert first["publishableKey"] in line and first["environment"] in line
    assert "publishable key" not in narrow
    assert f"secret      {first['secretKey']}" in narrow
    assert max(map(len, narrow.splitlines())) <= 80
