"""Turn `payorch scenario run --json` results into GitHub workflow commands: one `::error` per
failing step, on the scenario file and the step's line, so the pull request shows it in place.

Standard library only: it runs with the runner's own python3, whatever payorch runs on.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def _escape_data(text: str) -> str:
    # GitHub's workflow-command escaping (actions/toolkit, command.ts).
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _relative(path: str) -> str:
    workspace = os.environ.get("GITHUB_WORKSPACE") or os.getcwd()
    try:
        return str(Path(path).resolve().relative_to(Path(workspace).resolve()))
    except ValueError:
        return path


def annotations(results: dict) -> list[str]:
    lines = []
    for scenario in results.get("scenarios", []):
        if scenario.get("status") != "failed":
            continue
        failed = [s for s in scenario.get("steps", []) if s.get("status") == "failed"]
        where = f"file={_escape_property(_relative(scenario['file']))}"
        title = _escape_property(scenario.get("scenario") or "scenario")
        if not failed:  # failed before any step (a setup error)
            message = scenario.get("error") or scenario.get("failure") or "failed"
            lines.append(f"::error {where},title={title}::{_escape_data(message)}")
        for step in failed:
            message = f"{step.get('name')}: {step.get('failure') or 'failed'}"
            lines.append(
                f"::error {where},line={step.get('line')},title={title}::{_escape_data(message)}"
            )
    return lines


def main() -> int:
    try:
        results = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    except (OSError, ValueError, IndexError) as exc:
        print(f"::error title=payorch scenario run::no results to annotate ({exc})")
        return 1
    for line in annotations(results):
        print(line)
    print(f"payorch: {results.get('passed', 0)} passed, {results.get('failed', 0)} failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
