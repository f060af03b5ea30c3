"""What a step kind's `run` works with: the instance being run (`StepRun`, the interpreter's),
and the helpers several kinds share: saving values into the scope, paths into JSON, diffs."""

from __future__ import annotations

import json
import re
from typing import Any, Protocol

from payorch_cli.credentials import Credential
from payorch_cli.scenario.http import Exchange
from payorch_cli.scenario.matchers import MISSING, Matcher, show
from payorch_cli.scenario.model import SaveRule
from payorch_cli.scenario.receiver import Receiver
from payorch_cli.scenario.results import Failure, StepFailed

_SEGMENT = re.compile(r"[^.\[\]]+|\[\d+\]")


class StepRun(Protocol):
    """The instance a step runs in: its scope of `${...}` names, its event receiver and
    subscriptions (one slot per credential), and a way to send the step's own calls."""

    scope: dict[str, Any]
    receiver: Receiver | None
    slots: dict[str, dict[str, Any]]
    consumed: set[str]  # ids of the events an expect_event took (or that a restore made stale)

    @property
    def default(self) -> Credential: ...

    def send(
        self,
        method: str,
        path: str,
        credential: Credential,
        *,
        body: Any = None,
        headers: dict[str, str] | None = None,
        query: dict[str, Any] | None = None,
        raw: str | None = None,
        has_body: bool | None = None,
    ) -> Exchange: ...

    def poll_inbox(self, info: dict[str, Any]) -> None: ...

    def follow_restore(self) -> None: ...


def extract(data: Any, path: str) -> Any:
    """`a.b[0].c` (or `a.b.0.c`) in JSON data; MISSING if absent. `.` is the whole value."""
    if path in (".", ""):
        return data
    for segment in _SEGMENT.findall(path):
        key: Any = int(segment[1:-1]) if segment.startswith("[") else segment
        if isinstance(data, list) and isinstance(key, str) and key.isdigit():
            key = int(key)
        in_dict = isinstance(data, dict) and isinstance(key, str) and key in data
        in_list = isinstance(data, list) and isinstance(key, int) and -len(data) <= key < len(data)
        if not (in_dict or in_list):
            return MISSING
        data = data[key]
    return data


def diff_lines(matcher: Matcher, actual: Any, scope: dict[str, Any]) -> list[str]:
    import difflib

    def pretty(value: Any) -> list[str]:
        return json.dumps(value, indent=2, ensure_ascii=False, default=str).splitlines()

    expected = pretty(matcher.expected_view(actual, scope))
    got = pretty(matcher.actual_view(actual))
    return list(difflib.unified_diff(expected, got, "expected", "actual", lineterm="", n=2))


def save_values(
    scope: dict[str, Any], rules: list[SaveRule], data: Any, headers: dict[str, str], what: str
) -> None:
    for rule in rules:
        if rule.source == "header":
            value = headers.get(rule.path.lower(), MISSING)
        else:
            value = extract(data, rule.path)
        if value is MISSING:
            where = rule.path if rule.source == "json" else f"header {rule.path}"
            keys = ", ".join(sorted(data)[:15]) if isinstance(data, dict) else show(data)
            raise StepFailed(Failure(f"save {rule.name}: no {where} in {what} (it has: {keys})"))
        scope[rule.name] = value


def error_summary(body: Any) -> str:
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        error = body["error"]
        return f" ({error.get('code')}: {error.get('message')})"
    return ""
