"""A drift report read back: the document `payorch drift --json` writes
(payorch_cli/render/drift.py's `document`), for `payorch tui --drift FILE`, which shows the same
report as the text and HTML ones. A file that is not one is refused with one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIGURES = ("parity", "compared", "matched")
DIFFERENCE_FIELDS = ("seq", "where", "field", "upstream", "payorch", "fix")


class ReportError(Exception):
    """A file that is not a drift report; the text is the one line to print."""


def read_report(path: Path) -> dict[str, Any]:
    """The report in `path`, checked: its figures are numbers and each difference has the
    fields the views show."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReportError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ReportError(f"{path}: not a drift report ({exc.__class__.__name__})") from None
    if not isinstance(doc, dict) or not all(
        isinstance(doc.get(name), int | float) for name in FIGURES
    ):
        raise ReportError(
            f"{path}: not a drift report (write one with `payorch drift RECORDING --json`)"
        )
    differences = doc.get("differences")
    if not isinstance(differences, list) or not all(
        isinstance(d, dict) and all(name in d for name in DIFFERENCE_FIELDS) for d in differences
    ):
        raise ReportError(f"{path}: a drift report whose differences are not readable")
    return doc
