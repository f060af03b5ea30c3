"""`payorch drift`'s report, pure: as data (the `--json` document), as text at 80 columns, and
as one self-contained HTML file (`--html`) a user can attach to an issue. The three say the
same things: the parity figure, and each difference with the side to fix and, for a payorch
bug, the command that extracts the redacted exchange to attach."""

from __future__ import annotations

import html
import shlex
import textwrap
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from payorch_cli.drift.replay import Outcome

WIDTH = 80
COLUMNS = (("#", 5), ("path", 24), ("field", 17), ("upstream", 15), ("payorch", 15))
FIX_WORDS = {
    "payorch": "payorch differs from the real sandbox: a bug report we want",
    "recording": "the recording cannot be replayed faithfully here (transient upstream error, "
    "or an object made before the recording began): re-record it",
}


def attach_command(recording: str, seq: int) -> str:
    return f"payorch drift {shlex.quote(recording)} --exchange {seq} > drift-{seq}.jsonl"


def document(outcome: Outcome, recording: str, min_parity: float) -> dict[str, Any]:
    """The report as the `--json` document."""
    return {
        "recording": recording,
        "upstream": outcome.upstream,
        "target": outcome.target,
        "compared": outcome.compared,
        "matched": outcome.matched,
        "skipped": outcome.skipped,
        "polled": outcome.polled,
        "parity": round(outcome.parity, 6),
        "minParity": min_parity,
        "passed": outcome.parity >= min_parity,
        "differenceCount": outcome.total_differences,
        "differences": [
            {
                "seq": d.seq,
                "where": d.where,
                "field": d.field,
                "upstream": d.upstream,
                "payorch": d.payorch,
                "fix": d.fix,
                "attach": attach_command(recording, d.seq) if d.fix == "payorch" else None,
            }
            for d in outcome.differences
        ],
    }


def polled_words(doc: dict[str, Any]) -> str:
    """What the figures leave out for polls: nothing when the recording has none."""
    polled = int(doc.get("polled") or 0)
    if not polled:
        return ""
    return f", {polled} earlier {'read' if polled == 1 else 'reads'} of polls not compared"


def _cell(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def text_lines(doc: dict[str, Any]) -> list[str]:
    """The report as lines of at most WIDTH characters."""
    lines = [
        _cell(f"drift: {doc['recording']} (upstream {doc['upstream']})", WIDTH),
        "",
    ]
    differences = doc["differences"]
    if differences:
        lines.append(" ".join(name.ljust(width) for name, width in COLUMNS).rstrip())
        lines.append(" ".join("-" * width for _, width in COLUMNS))
        for d in differences:
            values = (str(d["seq"]), d["where"], d["field"], d["upstream"], d["payorch"])
            row = " ".join(_cell(v, w).ljust(w) for v, (_, w) in zip(values, COLUMNS, strict=True))
            lines.append(row.rstrip())
        hidden = doc["differenceCount"] - len(differences)
        if hidden > 0:
            lines.append(f"… and {hidden} more differences (not kept)")
        lines.append("")
        for fix in ("payorch", "recording"):
            seqs = sorted({d["seq"] for d in differences if d["fix"] == fix})
            if not seqs:
                continue
            shown = ", ".join(map(str, seqs[:12])) + (", …" if len(seqs) > 12 else "")
            lines += textwrap.wrap(f"Fix {fix} ({FIX_WORDS[fix]}): #{shown}", WIDTH)
            if fix == "payorch":
                # On a line of its own, never wrapped, so that it can be copied whole.
                lines += ["Attach one to an issue with:", attach_command(doc["recording"], seqs[0])]
        lines.append("")
    else:
        lines.append("No differences.")
    verdict = "ok" if doc["passed"] else f"below --min-parity {doc['minParity']}"
    lines.append(
        f"parity {doc['parity']:.4f}: {doc['matched']} of {doc['compared']} records match "
        f"({doc['skipped']} skipped{polled_words(doc)}), {doc['differenceCount']} differences; "
        f"{verdict}"
    )
    return [
        out
        for line in lines
        for out in (
            textwrap.wrap(line, WIDTH, break_long_words=False, break_on_hyphens=False) or [""]
        )
    ]


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>payorch drift report</title>
<style>
body{{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}}
table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:.3em .6em;text-align:left}}
code{{background:#f4f4f4;padding:0 .2em}}.bad{{color:#b00}}.ok{{color:#070}}
</style></head><body>
<h1>payorch drift report</h1>
<p>Recording <code>{recording}</code>, upstream <code>{upstream}</code>.</p>
<p class="{verdict_class}"><strong>Parity {parity:.4f}</strong>: {matched} of {compared} records
match ({skipped} skipped{polled}), {count} differences; minimum {min_parity}.</p>
{table}
</body></html>
"""


def html_page(doc: dict[str, Any]) -> str:
    """The report as one self-contained HTML page (no scripts, no external files)."""
    esc = html.escape
    if doc["differences"]:
        rows = "\n".join(
            "<tr>"
            + "".join(
                f"<td>{esc(str(d[key]))}</td>"
                for key in ("seq", "where", "field", "upstream", "payorch", "fix")
            )
            + f"<td>{'<code>' + esc(d['attach']) + '</code>' if d['attach'] else ''}</td></tr>"
            for d in doc["differences"]
        )
        table = (
            "<table><tr><th>#</th><th>path</th><th>field</th><th>upstream</th><th>payorch</th>"
            f"<th>fix</th><th>attach</th></tr>\n{rows}\n</table>"
        )
    else:
        table = "<p>No differences.</p>"
    return PAGE.format(
        recording=esc(doc["recording"]),
        upstream=esc(str(doc["upstream"])),
        verdict_class="ok" if doc["passed"] else "bad",
        parity=doc["parity"],
        matched=doc["matched"],
        compared=doc["compared"],
        skipped=doc["skipped"],
        polled=esc(polled_words(doc)),
        count=doc["differenceCount"],
        min_parity=doc["minParity"],
        table=table,
    )
