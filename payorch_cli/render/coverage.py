"""GET /_sim/coverage as people read it: the rows, event types and error codes reached, those
never reached highlighted; and the sum of several servers' coverage (`payorch scenario run
--coverage` without --base-url runs each scenario on its own simulator)."""

from __future__ import annotations

from typing import Any


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


def coverage_tables(report: dict[str, Any], *, all_errors: bool = False) -> Any:
    """Rich renderables: the state tables and the event types in full (never-reached rows in
    red), the error codes reached (and, with `all_errors`, those not), and the totals."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    def count(n: int) -> Text:
        return Text(str(n), style="bold green") if n else Text("never", style="bold red")

    states = Table(title="State-table rows", title_justify="left", expand=False)
    for column in ("table", "transition", "via", "reached"):
        states.add_column(column, justify="right" if column == "reached" else "left")
    for table in report["stateTables"]:
        for row in table["rows"]:
            style = None if row["reached"] else "red"
            move = f"{row['from']} -> {row['to']}"
            states.add_row(table["table"], move, row["via"], count(row["reached"]), style=style)
    events = Table(title="Event types", title_justify="left")
    events.add_column("type")
    events.add_column("reached", justify="right")
    for event in report["events"]:
        events.add_row(
            event["type"], count(event["reached"]), style=None if event["reached"] else "red"
        )
    errors = Table(title="Error codes" + ("" if all_errors else " reached"), title_justify="left")
    errors.add_column("code")
    errors.add_column("status", justify="right")
    errors.add_column("reached", justify="right")
    for error in report["errors"]:
        if error["reached"] or all_errors:
            errors.add_row(error["code"], str(error["status"]), count(error["reached"]))
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
    return Group(states, events, errors, summary)


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
