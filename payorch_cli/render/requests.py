"""Request-log summaries (GET /_sim/requests, the live tail) as one line each, and one request
with its bodies (GET /_sim/requests/{requestId}) as a short report.

A line never wraps: `Layout.for_width` picks the columns a terminal width holds, by priority:
the request id (whole: it is what a user copies into `payorch logs show`), the time, method,
status, the path (cut in the middle when long), the duration; from about 120 columns the error
code, the merchant and environment, the tool that made it (`tool:tui`, for --include-tools),
the simulated time and the replay marker follow. Paths
under the API's prefix are shown without it (`/payments/TXN-...`; the control plane's begin
with `/_sim`), as the API's docs write them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from payorch.vocabulary import API_PREFIX

ELLIPSIS = "…"
REQUEST_ID_WIDTH = 28  # req_ and 24 hex digits
PATH_MIN = 28  # the path keeps this much (a whole /payments/TXN-... at 80 columns) before the
# duration appears
PATH_ROOMY = 32  # the path keeps this much before the wide columns (code, merchant...) appear
PATH_MAX = 48  # wider paths are cut in the middle; the line does not grow past it


def _local(stamp: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).astimezone()
    except ValueError:
        return None


def _time(summary: dict[str, Any]) -> str:
    real = _local(summary.get("at"))
    return real.strftime("%H:%M:%S") if real else "??:??:??"


def _sim_time(summary: dict[str, Any]) -> str:
    sim = _local(summary.get("simulatedAt"))
    return f"sim {sim.strftime('%m-%d %H:%M:%S')}" if sim else "sim ?"


def _method(summary: dict[str, Any]) -> str:
    return str(summary.get("method") or "?")


def _status(summary: dict[str, Any]) -> str:
    return str(summary.get("status") or "?")


def _code(summary: dict[str, Any]) -> str:
    return str(summary.get("errorCode") or "")


def _duration(summary: dict[str, Any]) -> str:
    ms = summary.get("durationMs")
    if not isinstance(ms, int | float):
        return ""
    if ms < 100:
        return f"{ms:.1f}ms"
    if ms < 10_000:
        return f"{ms:.0f}ms"
    return f"{ms / 1000:.0f}s"


def _who(summary: dict[str, Any]) -> str:
    merchant = summary.get("merchantId")
    return f"{merchant}/{summary.get('environment')}" if merchant else "(no credential)"


def _replayed(summary: dict[str, Any]) -> str:
    return "replayed" if summary.get("idempotentReplayed") else ""


def _tool(summary: dict[str, Any]) -> str:
    """Which of payorch's tools made it (X-Payorch-Tool: shown with --include-tools)."""
    return f"tool:{summary['tool']}" if summary.get("tool") else ""


def _request_id(summary: dict[str, Any]) -> str:
    return str(summary.get("id") or "?")


def display_path(summary: dict[str, Any]) -> str:
    """The path and query, without the API's prefix."""
    path = str(summary.get("path") or "")
    if path.startswith(API_PREFIX + "/"):
        path = path[len(API_PREFIX) :]
    if summary.get("query"):
        path += f"?{summary['query']}"
    return path


def cut_middle(text: str, width: int) -> str:
    """`text` in `width` characters: its start and (the longer part) its end, where ids are."""
    if len(text) <= width:
        return text
    head = (width - 1) // 3
    tail = width - 1 - head
    return text[:head] + ELLIPSIS + text[len(text) - tail :]


def cut_end(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + ELLIPSIS


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    width: int
    value: Callable[[dict[str, Any]], str]
    right: bool = False  # right-aligned (numbers)


# Display order is this order; `rank` (the index in PRIORITY) says which give way first.
TIME = Column("time", 8, _time)
SIM = Column("sim", 18, _sim_time)
METHOD = Column("method", 6, _method)
STATUS = Column("status", 3, _status)
CODE = Column("code", 24, _code)
DURATION = Column("duration", 6, _duration, right=True)
REQUEST_ID = Column("id", REQUEST_ID_WIDTH, _request_id)
WHO = Column("who", 26, _who)
REPLAYED = Column("replayed", 8, _replayed)
TOOL = Column("tool", 13, _tool)  # tool:scenario
DISPLAY_ORDER = (
    TIME,
    SIM,
    METHOD,
    "path",
    STATUS,
    CODE,
    DURATION,
    REQUEST_ID,
    WHO,
    REPLAYED,
    TOOL,
)
ALWAYS = (REQUEST_ID, TIME, METHOD, STATUS)
NARROW = (DURATION,)  # shown while the path keeps PATH_MIN
WIDE = (CODE, TOOL, WHO, SIM, REPLAYED)  # shown while the path keeps PATH_ROOMY


@dataclass(frozen=True, slots=True)
class Layout:
    columns: tuple[Column, ...]
    path_width: int

    @classmethod
    def for_width(cls, width: int) -> Layout:
        """The columns a terminal of `width` holds with no line wrapping (the last column is
        left free: some terminals wrap a line that fills the row)."""
        usable = width - 1
        chosen = list(ALWAYS)

        def fixed() -> int:
            return sum(column.width + 1 for column in chosen)

        # Strictly by priority: once a column does not fit, none after it is shown.
        for extra, path_keeps in [(c, PATH_MIN) for c in NARROW] + [(c, PATH_ROOMY) for c in WIDE]:
            if fixed() + extra.width + 1 + path_keeps > usable:
                break
            chosen.append(extra)
        path_width = max(PATH_MIN, min(PATH_MAX, usable - fixed()))
        ordered = tuple(c for c in DISPLAY_ORDER if isinstance(c, Column) and c in chosen)
        return cls(ordered, path_width)

    @property
    def names(self) -> list[str]:
        return [column.name for column in self.columns]

    def line(self, summary: dict[str, Any]) -> str:
        cells = []
        for column in DISPLAY_ORDER:
            if column == "path":
                cells.append(
                    f"{cut_middle(display_path(summary), self.path_width):<{self.path_width}}"
                )
            elif column in self.columns:
                assert isinstance(column, Column)
                text = cut_end(column.value(summary), column.width)
                cells.append(
                    f"{text:>{column.width}}" if column.right else f"{text:<{column.width}}"
                )
        return " ".join(cells).rstrip()


def request_line(summary: dict[str, Any], width: int = 80) -> str:
    """One request on one line of at most `width - 1` characters (`Layout.for_width`)."""
    return Layout.for_width(width).line(summary)


def _body_text(view: dict[str, Any]) -> str:
    if "body" in view:
        return json.dumps(view["body"], indent=2, ensure_ascii=False)
    if "text" in view:
        return str(view["text"])
    return "(empty)"


def _body_heading(title: str, view: dict[str, Any]) -> str:
    cut = ", cut: only its start was kept" if view.get("truncated") else ""
    return f"{title} ({view.get('bytes', 0)} bytes{cut}):"


def request_detail(detail: dict[str, Any]) -> str:
    """`payorch logs show`: the request's facts, one per line, then both bodies (masked by the
    server), pretty-printed JSON or the text as kept."""
    code = f" {detail['errorCode']}" if detail.get("errorCode") else ""
    replay = (
        " (answered from an Idempotency-Key's stored response)"
        if detail.get("idempotentReplayed")
        else ""
    )
    path = str(detail.get("path") or "")
    if detail.get("query"):
        path += f"?{detail['query']}"
    real, sim = _local(detail.get("at")), _local(detail.get("simulatedAt"))
    facts = [
        f"{detail.get('method', '?')} {path}",
        f"Request id:  {_request_id(detail)}",
        f"Status:      {_status(detail)}{code}{replay}",
        f"At:          {real.isoformat(sep=' ', timespec='milliseconds') if real else '?'}"
        f" (simulated {sim.isoformat(sep=' ', timespec='seconds') if sim else '?'})",
        f"Duration:    {_duration(detail) or '?'}",
        f"Merchant:    {_who(detail)}",
    ]
    if detail.get("tool"):
        facts.append(f"Made by:     payorch's {detail['tool']} (X-Payorch-Tool), not your code")
    if detail.get("eventIds"):
        facts.append(f"Events:      {', '.join(detail['eventIds'])}")
    request = detail.get("request") or {}
    headers = request.get("headers") or {}
    for name, value in headers.items():
        facts.append(f"Header:      {name}: {value}")
    request_body = request.get("body") or {}
    response_body = (detail.get("response") or {}).get("body") or {}
    return "\n".join(
        [
            *facts,
            "",
            _body_heading("Request body", request_body),
            _body_text(request_body),
            "",
            _body_heading("Response body", response_body),
            _body_text(response_body),
        ]
    )
