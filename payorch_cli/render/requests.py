"""Request-log summaries (GET /_sim/requests, the live tail) as one line of text each."""

from __future__ import annotations

from datetime import datetime
from typing import Any


def _local(stamp: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).astimezone()
    except ValueError:
        return None


def request_line(summary: dict[str, Any]) -> str:
    """`10:15:02 (sim 11-28 10:15:02)  POST  /api/v1/payments  201  req_...  mer_x/sandbox
    3.1 ms  replayed`: real and simulated times (local), method, path and query, status and
    error code, request id, merchant/environment, duration, and the replay marker."""
    real, sim = _local(summary.get("at")), _local(summary.get("simulatedAt"))
    when = real.strftime("%H:%M:%S") if real else "??:??:??"
    sim_text = sim.strftime("%m-%d %H:%M:%S") if sim else "?"
    path = str(summary.get("path") or "")
    if summary.get("query"):
        path += f"?{summary['query']}"
    status = str(summary.get("status") or "?")
    if summary.get("errorCode"):
        status += f" {summary['errorCode']}"
    merchant = summary.get("merchantId")
    who = f"{merchant}/{summary.get('environment')}" if merchant else "(no credential)"
    duration = summary.get("durationMs")
    took = f"{duration:.1f} ms" if isinstance(duration, int | float) else ""
    replay = "  replayed" if summary.get("idempotentReplayed") else ""
    return (
        f"{when} (sim {sim_text})  {summary.get('method', '?'):<6} {path:<34} {status:<28} "
        f"{summary.get('id', '?')}  {who:<26} {took:>9}{replay}"
    )
