"""Scenario results as text: the failure block (step, request, answer, mismatches, diff) and the
one-line summary. Plain strings, so the console, JUnit XML and pytest show the same words."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from payorch import bounded

if TYPE_CHECKING:
    from payorch_cli.scenario.interpreter import InstanceResult, StepResult

BODY_LIMIT = 1500


def _body(text: str | None, parsed: Any = None) -> list[str]:
    if parsed is not None:
        text = json.dumps(parsed, indent=2, ensure_ascii=False)
    if not text:
        return []
    if len(text) > BODY_LIMIT:
        text = text[:BODY_LIMIT] + f"\n… ({len(text) - BODY_LIMIT} more characters)"
    return text.splitlines()


def failure_lines(result: StepResult) -> list[str]:
    """Where it failed, what was sent and received, and what differs."""
    step, failure = result.step, result.failure
    assert failure is not None
    lines = [f"step {step.label} ({step.kind}) at {step.loc}", f"  {failure.message}"]
    exchange = result.exchange
    if exchange is not None:
        who = f"  [as {result.credential.name}]" if result.credential else ""
        lines += ["", f"  request: {exchange.method} {exchange.url}{who}"]
        for name, value in exchange.request_headers.items():
            if name.lower() == "authorization":
                value = value[:19] + "…" if len(value) > 20 else value
            if name.lower() not in ("accept", "content-type"):
                lines.append(f"    {name}: {value}")
        parsed = None
        if exchange.request_body:
            try:
                parsed = bounded.json_loads(exchange.request_body)
            except ValueError:
                parsed = None
        lines += ["    " + line for line in _body(exchange.request_body, parsed)]
        lines.append(f"  response: {exchange.status} in {exchange.duration_ms:.0f} ms")
        lines += ["    " + line for line in _body(exchange.text, exchange.json)]
    if len(failure.mismatches) > 1:
        lines += ["", "  mismatches:"] + [f"    {m.path}: {m.message}" for m in failure.mismatches]
    if failure.diff:
        lines += ["", "  diff (- expected, + actual; matchers that hold show the actual value):"]
        lines += ["    " + line for line in failure.diff]
    lines += ["  " + note for note in failure.notes]
    return lines


def instance_failure_lines(result: InstanceResult) -> list[str]:
    if result.error:
        return [f"{result.instance.scenario.loc}: {result.error}"]
    failed = result.failed_step
    return failure_lines(failed) if failed else []


def summary_line(results: list[InstanceResult], seconds: float, skipped: int = 0) -> str:
    passed = sum(1 for r in results if r.passed)
    failed = len(results) - passed
    skips = f", {skipped} skipped" if skipped else ""
    return f"{passed} passed, {failed} failed{skips} in {seconds:.2f} s"
