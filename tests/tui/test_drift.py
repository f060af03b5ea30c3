"""The Drift screen (issue 35: "the TUI and `payorch drift --html` show the same report"): a
report of `payorch drift --json` opened with `payorch tui --drift FILE`, its parity and every
difference listed, the selected one in the detail pane with its attach command; a missing or
unreadable report said in place, and refused before the TUI starts."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from payorch_cli.main import app as cli
from payorch_cli.render.drift import html_page, text_lines
from payorch_cli.tui.app import PayorchApp
from payorch_cli.tui.screens.drift import NO_REPORT, DriftScreen, summary_text
from payorch_cli.tui.widgets.drift import DriftTable
from tests.tui.fakes import DRIFT_REPORT, FakeBackend
from tests.tui.helpers import screen_text, settle


def app_with(report: Path | None) -> PayorchApp:
    app = PayorchApp(FakeBackend(), monotonic=lambda: 0.0)  # type: ignore[arg-type]  # FakeBackend stands in for Backend
    app.drift_report = report
    return app


async def test_the_drift_screen_lists_every_difference_of_the_report_and_details_the_selected() -> (
    None
):
    doc = json.loads(DRIFT_REPORT.read_text())
    app = app_with(DRIFT_REPORT)
    async with app.run_test(size=(120, 35)) as pilot:
        await pilot.press("6")
        await settle(pilot)
        assert isinstance(app.screen, DriftScreen)
        table = app.screen.query_one(DriftTable)
        assert table.row_count == len(doc["differences"]) == 7
        text = screen_text(app)
        assert "parity 0.8750 · 42 of 48 match · 1 skipped · 7 differences" in text
        for difference in doc["differences"]:
            assert difference["field"] in text
        # The first row's detail: a payorch bug, with the command that extracts its exchange.
        assert doc["differences"][0]["attach"] in text
        for _ in range(4):  # down to the fifth: the recording's side, no attach command
            await pilot.press("down")
        await settle(pilot)
        text = screen_text(app)
        assert "fix      recording: the recording cannot be replayed faithfully" in text
        assert "Attach it to an issue" not in text


async def test_the_tui_the_text_and_the_html_report_say_the_same_differences() -> None:
    doc = json.loads(DRIFT_REPORT.read_text())
    page, lines = html_page(doc), "\n".join(text_lines(doc))
    app = app_with(DRIFT_REPORT)
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.press("6")
        await settle(pilot)
        rows = [app.screen.query_one(DriftTable).get_row_at(i) for i in range(7)]
    for row, difference in zip(rows, doc["differences"], strict=True):
        seq, where, field, upstream, payorch = (str(cell) for cell in row[:5])
        assert (seq, field, upstream, payorch) == (
            str(difference["seq"]),
            difference["field"],
            difference["upstream"],
            difference["payorch"],
        )
        assert where == difference["where"] and str(row[5]) == difference["fix"]
        assert f"<td>{difference['seq']}</td>" in page
    assert "parity 0.8750" in lines and "Parity 0.8750" in page


async def test_without_a_report_the_screen_says_how_to_make_one() -> None:
    app = app_with(None)
    async with app.run_test(size=(120, 35)) as pilot:
        await pilot.press("6")
        await settle(pilot)
        assert app.screen.query_one(DriftTable).row_count == 0
        assert "No drift report opened" in screen_text(app)
        assert "payorch tui --drift report.json" in NO_REPORT


async def test_a_report_that_became_unreadable_is_said_in_place(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    report.write_text('{"parity": 1.0, "compared": 3, "matched": 3, "differences": []}')
    app = app_with(report)
    async with app.run_test(size=(120, 35)) as pilot:
        await pilot.press("6")
        await settle(pilot)
        assert "No difference" in screen_text(app)
        report.write_text('{"parity": 1.0, "compared"')  # cut while the TUI runs
        await pilot.press("r")
        await settle(pilot)
        # xdist's longer tmp path wraps the line at 120 columns: compare the words, not the rows
        shown = " ".join(screen_text(app).split())
        assert f"{report}: not a drift report (JSONDecodeError)" in shown


def test_tui_refuses_a_file_that_is_not_a_drift_report_in_one_line(tmp_path: Path) -> None:
    recording = tmp_path / "exchanges.jsonl"
    recording.write_text('{"format": "payorch-recording", "version": 1}\n')
    for path, why in (
        (recording, "not a drift report (write one with `payorch drift RECORDING --json`)"),
        (tmp_path / "none.json", "no such file"),
    ):
        done = CliRunner().invoke(cli, ["tui", "--drift", str(path)])
        assert done.exit_code == 2, done.output
        assert done.output == f"payorch tui: --drift {path}: {why}\n"


def test_the_three_views_say_the_early_reads_of_polls_left_out() -> None:
    doc = json.loads(DRIFT_REPORT.read_text())
    assert "earlier" not in "\n".join(text_lines(doc)) and "polled" not in summary_text(doc).plain
    doc["polled"] = 3
    words = "(1 skipped, 3 earlier reads of polls not compared)"
    assert words in " ".join(text_lines(doc)) and words in html_page(doc).replace("\n", " ")
    assert "· 1 skipped · 3 polled ·" in summary_text(doc).plain
