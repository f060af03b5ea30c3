"""Scenarios from the MCP tools: `record_scenario` is `payorch record` (the log's requests through
payorch_cli/record.py, with the command's own paging, detail, event and credential helpers), and
`run_scenario` is `payorch scenario run --base-url` (the loader and the interpreter), both
against the sandbox the MCP server drives.
"""

from __future__ import annotations

import time
from typing import Any

from payorch_cli.mcp.access import ScenarioAccess
from payorch_cli.mcp.sandbox import Sandbox, ToolFailure

CONTROL_PLANE_READ = ("/_sim/", "/api/v1/_sim/")


def _observation(row: dict[str, Any]) -> bool:
    """A read of the control plane (a trace, the clock, the providers, the saved states): what
    the agent's observation tools send. It changes nothing and its answer depends on the moment,
    so a recording leaves it out."""
    return row.get("method") == "GET" and str(row.get("path") or "").startswith(CONTROL_PLANE_READ)


def record_session(sandbox: Sandbox, last: int | None, name: str) -> tuple[str, dict[str, Any]]:
    from payorch_cli.client import ApiError, Client
    from payorch_cli.mcp.sandbox import MCP_TOOL
    from payorch_cli.record import (
        delivered_events,
        identity_of,
        log_detail,
        log_summaries,
        record,
        to_yaml,
    )

    client = Client(sandbox.api_url, sandbox.key("sandbox"), tool=MCP_TOOL)
    try:
        summaries, outside = log_summaries(client, None, None)
        observed = [row for row in summaries if _observation(row)]
        summaries = [row for row in summaries if not _observation(row)]
        if last is not None:  # the last N that become steps, as `payorch record --last`
            from payorch_cli.record import recordable

            kept, counted = [], 0
            for row in reversed(summaries):
                counted += recordable(row["method"], row["path"])
                if counted > last:
                    outside.extend(row.get("eventIds") or ())
                    continue
                kept.append(row)
            summaries = kept[::-1]
        if not summaries:
            raise ToolFailure(
                "nothing_to_record",
                "The request log holds no request to record since the start or the last reset.",
                hint="Make the calls first (create_payment, simulate_payment...), then record.",
            )
        details = [log_detail(client, row) for row in summaries]
        events = delivered_events(client)
    except ApiError as exc:
        raise ToolFailure.of(exc) from None
    finally:
        client.close()
    recording = record(details, events, identity_of(sandbox.key("sandbox")), name, outside)
    text = to_yaml(recording.document, recording.comments)
    steps = recording.document["steps"]
    data = {
        "yaml": text,
        "steps": len(steps),
        "requests": len(details),
        "leftOut": recording.skipped + [f"{r['method']} {r['path']}" for r in observed],
        "notes": recording.notes,
        "unexpressed": recording.unexpressed,
        "unlinked": recording.unlinked,
    }
    return text, data


def run(
    sandbox: Sandbox, access: ScenarioAccess, scenario_yaml: str | None, path: str | None
) -> tuple[str, dict[str, Any]]:
    """Runs YAML text, or the scenario files at a path within `access` (access.py says why)."""
    from payorch_cli.scenario.credentials import Credentials
    from payorch_cli.scenario.interpreter import Runner
    from payorch_cli.scenario.loader import load_text
    from payorch_cli.scenario.report import instance_failure_lines, summary_line
    from payorch_cli.scenario.reporters import QuietReporter, result_json
    from payorch_cli.scenario.source import ScenarioFileError

    if (scenario_yaml is None) == (path is None):
        raise ToolFailure(
            "invalid_request",
            "Give exactly one of scenario_yaml and path.",
            hint="Read the payorch://scenarios/language resource for the language; "
            "record_scenario writes one from this session.",
        )
    credentials = Credentials.builtin()
    sources = [(scenario_yaml, "<scenario>")] if scenario_yaml is not None else []
    skipped: list[str] = []
    if path is not None:
        found = access.scenario_files(path)
        sources = [(f.text, f.shown) for f in found.files]
        skipped = found.skipped
    scenarios, errors = [], []
    for text, shown in sources:
        try:
            scenarios.append(load_text(text, shown, credentials.check))
        except ScenarioFileError as exc:
            errors += exc.errors
    if errors:
        raise _invalid(errors)
    instances = [i for s in scenarios for i in s.instances()]
    if not instances:
        raise ToolFailure(
            "invalid_request",
            f"No scenario found in {path}.",
            details={"param": "path", "skipped": skipped[:20]},
        )
    started = time.perf_counter()
    # The run `payorch scenario run --base-url` makes, with the environment narrowed.
    default = credentials.default(sandbox.key("sandbox"))
    runner = Runner(sandbox.api_url, credentials, default, QuietReporter(), env=access.env_scope())
    results = [runner.run(instance) for instance in instances]
    lines = [summary_line(results, time.perf_counter() - started)]
    for result in results:
        mark = "passed" if result.passed else "FAILED"
        lines.append(f"{mark}: {result.instance.node_id}")
        if not result.passed:
            lines += [f"  {line}" for line in instance_failure_lines(result)]
    if skipped:
        lines.append(f"Not run: {len(skipped)} other file(s) (data.skipped says why).")
    data = {
        "passed": sum(r.passed for r in results),
        "failed": sum(not r.passed for r in results),
        "scenarios": [result_json(r) for r in results],
        "skipped": skipped,
    }
    return "\n".join(lines), data


def _invalid(errors: list[Any]) -> ToolFailure:
    return ToolFailure(
        "invalid_scenario",
        "\n".join(str(e) for e in errors),
        hint="Fix each problem (file:line:column); the payorch://scenarios/language resource "
        "describes the language and payorch://scenarios/schema its JSON Schema.",
    )
