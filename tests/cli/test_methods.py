"""`payorch methods`: which payment methods exist and what each needs, at 80 columns, against a
real server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.cli.test_serve import PAYORCH, Server


def _methods(server: Server, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PAYORCH, "methods", "--base-url", server.url, *args],
        capture_output=True,
        text=True,
        env={"COLUMNS": "80", "PATH": "/usr/bin:/bin"},
        timeout=60,
    )


def test_a_line_per_method_with_what_it_needs_at_80_columns(tmp_path: Path) -> None:
    server = Server(tmp_path / "data")
    try:
        table = _methods(server)
        assert table.returncode == 0, table.stderr
        lines = table.stdout.splitlines()
        assert lines[0].split() == ["id", "rail", "cty", "channel", "limits", "needs", "ok"]
        assert all(len(line) <= 80 and line == line.rstrip() for line in lines), lines
        boleto = next(line for line in lines if line.startswith("1007 "))
        assert boleto.split() == ["1007", "boleto", "BRA", "cash", "BRL", "5-50000", "name,doc",
                                  "yes"]  # fmt: skip
        assert next(line for line in lines if line.startswith("1013 ")).endswith(" no")

        brazil = _methods(server, "--country", "BR", "--json")
        assert brazil.returncode == 0, brazil.stderr
        rows = json.loads(brazil.stdout)
        assert {row["countryIso3"] for row in rows} == {"BRA"}
        pix = next(row for row in rows if row["paymentMethodId"] == "1006")
        assert [f["key"] for f in pix["requiredFields"]] == ["documentId"]
        assert pix["flow"] == "direct" and pix["routable"] is True

        # A production key lists its methods; what they need is the control plane's, so `?`.
        live = _methods(server, "--api-key", "sk_live_lvuyxno67qob31r1gq32rfwr")
        assert live.returncode == 0, live.stderr
        assert " ? " in next(line for line in live.stdout.splitlines() if line.startswith("1001"))
    finally:
        server.stop()


def test_a_bad_country_is_the_apis_error_in_one_line(tmp_path: Path) -> None:
    server = Server(tmp_path / "data")
    try:
        bad = _methods(server, "--country", "ZZZZ")
        assert bad.returncode == 1
        assert bad.stderr.startswith("payorch methods: ") and bad.stderr.count("\n") == 1
    finally:
        server.stop()
