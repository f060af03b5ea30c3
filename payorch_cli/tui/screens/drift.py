"""Drift: the report of `payorch drift` (written with `--json`, opened with `payorch tui --drift
FILE`), as its text and HTML forms show it: the parity figure, the differences table (exchange,
where, field, upstream, payorch, which side to fix) and the selected difference in a detail pane
with the command that extracts its redacted exchange to attach to an issue.

A report is a file, not live data: it is read when the screen is shown and on `r`; nothing the
server does makes it stale."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from payorch_cli.tui.screens.base import LiveScreen
from payorch_cli.tui.widgets.drift import DriftDetail, DriftTable, difference_id

NO_REPORT = (
    " No drift report opened: write one with `payorch drift RECORDING --json > report.json`, "
    "then start `payorch tui --drift report.json`."
)


class DriftScreen(LiveScreen):
    def __init__(self) -> None:
        super().__init__()
        self.differences: dict[str, dict[str, Any]] = {}

    def compose(self) -> ComposeResult:
        yield from self.compose_header()
        yield Static(id="drift-summary")
        yield DriftTable(id="drift")
        with VerticalScroll(id="drift-detail-scroll"):
            yield DriftDetail(id="drift-detail")
        yield from self.compose_footer()

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one(DriftTable).focus()

    def reload(self, *, quiet: bool = False) -> None:
        path = self.payorch.drift_report
        if path is None:
            self.query_one("#drift-summary", Static).update(Text(NO_REPORT, style="dim"))
            self._show_detail(None)
            return
        self._read(path)

    @work(thread=True, group="drift", exclusive=True, exit_on_error=False)
    def _read(self, path: Path) -> None:
        from payorch_cli.drift.report import ReportError, read_report

        try:
            doc = read_report(path)
        except ReportError as exc:
            self.deliver(self._unreadable, str(exc))
            return
        self.deliver(self._show, doc)

    def _unreadable(self, why: str) -> None:
        self.query_one("#drift-summary", Static).update(Text(f" {why}", style="bold red"))

    def _show(self, doc: dict[str, Any]) -> None:
        rows = [{**d, "id": difference_id(i)} for i, d in enumerate(doc["differences"])]
        self.differences = {row["id"]: row for row in rows}
        self.query_one("#drift-summary", Static).update(summary_text(doc))
        self.query_one(DriftTable).show(rows)
        self._show_detail(self.selected_difference())

    def selected_difference(self) -> dict[str, Any] | None:
        selected = self.query_one(DriftTable).selected_id()
        return None if selected is None else self.differences.get(selected)

    @on(DataTable.RowHighlighted, "#drift")
    def _highlighted(self) -> None:
        self._show_detail(self.selected_difference())

    def _show_detail(self, difference: dict[str, Any] | None) -> None:
        self.query_one(DriftDetail).show(difference)


def summary_text(doc: dict[str, Any]) -> Text:
    """The report's figures on one line, as the text report's last line says them."""
    passed = bool(doc.get("passed", doc["parity"] >= doc.get("minParity", 1.0)))
    hidden = int(doc.get("differenceCount", len(doc["differences"]))) - len(doc["differences"])
    return Text.assemble(
        (f" parity {float(doc['parity']):.4f}", "bold green" if passed else "bold red"),
        (f" · {doc['matched']} of {doc['compared']} match", ""),
        (f" · {doc.get('skipped', 0)} skipped", "dim"),
        (f" · {doc['polled']} polled" if doc.get("polled") else "", "dim"),
        (f" · {doc.get('differenceCount', len(doc['differences']))} differences", ""),
        (f" ({hidden} not kept)" if hidden > 0 else "", "dim"),
        (f" · upstream {doc.get('upstream', '?')}", "dim"),
    )
