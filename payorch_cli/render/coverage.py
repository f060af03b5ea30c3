"""GET /_sim/coverage as people read it: the rows, event types and error codes reached, those
never reached highlighted; and the sum of several servers' coverage (`payorch scenario run
--coverage` without --base-url runs each scenario on its own simulator)."""

from __future__ import annotations

from typing import Any

from payorch_cli.render.layout import Column

# The way a row is reached is prose: under its row when the row is too wide for it.
_VIA = Column("via", spill=True)
_REACHED = Column("reached", right=True, marks=(("never", "bold red"),))


def merge(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """One report whose counts are the sums of `reports`' (same universe: same server build);
    `since` is the earliest. An empty list gives an empty dict."""
    if not reports:
        return {}
    first = reports[0]
    rows: dict[str, int] = {}
    events: dict[str, int] = {}
    errors: dict[tuple[str, int], int] = {}
    for report in reports:
        for table in report["stateTables"]:
            for row in table["rows"]:
                rows[row["key"]] = rows.get(row["key"], 0) + row["reached"]
        for event in report["events"]:
            events[event["type"]] = events.get(event["type"], 0) + event["reached"]
        for error in report["errors"]:
            key = (error["code"], error["status"])
            errors[key] = errors.get(key, 0) + error["reached"]
    tables: list[dict[str, Any]] = [
        {
            "table": table["table"],
            "rows": [{**row, "reached": rows[row["key"]]} for row in table["rows"]],
        }
        for table in first["stateTables"]
    ]
    merged_events: list[dict[str, Any]] = [
        {"type": name, "reached": n} for name, n in events.items()
    ]
    merged_errors: list[dict[str, Any]] = [
        {"code": code, "status": status, "reached": n}
        for (code, status), n in sorted(errors.items())
    ]
    return {
        "since": min(r["since"] for r in reports),
        "stateTables": tables,
        "events": merged_events,
        "errors": merged_errors,
        "totals": {
            "stateRows": _total([r["reached"] for t in tables for r in t["rows"]]),
            "events": _total([e["reached"] for e in merged_events]),
            "errors": _total([e["reached"] for e in merged_errors]),
        },
    }


def _total(counts: list[int]) -> dict[str, Any]:
    reached = sum(1 for n in counts if n)
    percent = round(100 * reached / len(counts), 1) if counts else 100.0
    return {"reached": reached, "total": len(counts), "percent": percent}


def unreached(report: dict[str, Any]) -> dict[str, list[str]]:
    """The names never reached: state rows (`table: from -> to via`), event types, error codes."""
    return {
        "stateRows": [
            f"{t['table']}: {r['from']} -> {r['to']} ({r['via']})"
            for t in report["stateTables"]
            for r in t["rows"]
            if not r["reached"]
        ],
        "events": [e["type"] for e in report["events"] if not e["reached"]],
        "errors": [f"{e['code']} {e['status']}" for e in report["errors"] if not e["reached"]],
    }


def _line(name: str, total: dict[str, Any]) -> str:
    return f"{name}: {total['reached']}/{total['total']} ({total['percent']}%)"


def _reached(n: int) -> str:
    return str(n) if n else "never"


def coverage_tables(report: dict[str, Any], *, all_errors: bool = False) -> Any:
    """Renderables: the state tables and the event types in full (never-reached rows say
    `never`), the error codes reached (and, with `all_errors`, those not), and the totals."""
    from rich.console import Group
    from rich.text import Text

    from payorch_cli.render.layout import Columns

    states = Columns(
        (Column("table"), Column("transition"), _REACHED, _VIA),
        [
            (table["table"], f"{row['from']} -> {row['to']}", _reached(row["reached"]), row["via"])
            for table in report["stateTables"]
            for row in table["rows"]
        ],
    )
    events = Columns(
        (Column("event type"), _REACHED),
        [(event["type"], _reached(event["reached"])) for event in report["events"]],
    )
    shown = [e for e in report["errors"] if e["reached"] or all_errors]
    errors = Columns(
        (Column("error code"), Column("status", right=True), _REACHED),
        [(e["code"], str(e["status"]), _reached(e["reached"])) for e in shown],
    )
    totals = report["totals"]
    summary = Text(
        "  ".join(
            [
                _line("state rows", totals["stateRows"]),
                _line("events", totals["events"]),
                _line("error codes", totals["errors"]),
            ]
        )
        + f"  (since {report['since']})"
    )
    titles = ("State-table rows", "Event types", "Error codes" + ("" if all_errors else " reached"))
    parts = (states, events, errors)
    return Group(
        *(
            item
            for title, part in zip(titles, parts, strict=True)
            for item in (Text(title, style="bold"), part, Text(""))
        ),
        summary,
    )


def coverage_text(report: dict[str, Any]) -> str:
    """Plain text for logs: totals, then every row, event type and error code never reached."""
    totals = report["totals"]
    lines = [
        "coverage: "
        + ", ".join(
            [
                _line("state rows", totals["stateRows"]),
                _line("events", totals["events"]),
                _line("error codes", totals["errors"]),
            ]
        )
    ]
    missing = unreached(report)
    for row in missing["stateRows"]:
        lines.append(f"  never reached: {row}")
    for event in missing["events"]:
        lines.append(f"  never fired: {event}")
    return "\n".join(lines)
