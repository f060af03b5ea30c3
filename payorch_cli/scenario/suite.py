"""A run of many scenario files: discover, load (all errors before anything runs), filter with
-k, run each instance on a fresh in-process simulator or against --base-url, report."""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from payorch_cli.credentials import Credential
from payorch_cli.scenario.credentials import Credentials
from payorch_cli.scenario.interpreter import InstanceResult, Reporter, Runner
from payorch_cli.scenario.loader import discover, load_file
from payorch_cli.scenario.model import Instance, Scenario
from payorch_cli.scenario.source import ScenarioError, ScenarioFileError

# The tag of scenarios that need a server of their own (exact balances, list totals, the
# provider world): a shared --base-url server's other data would fail them with plain diffs.
ISOLATED_TAG = "isolated"
ISOLATED_REASON = (
    "tagged `isolated`: it checks exact balances or totals, so it needs a server of its own"
)


def needs_isolation(instance: Instance) -> bool:
    return ISOLATED_TAG in instance.scenario.tags


def split_isolated(instances: list[Instance]) -> tuple[list[Instance], list[Instance]]:
    """(the instances a shared server can run, those that need a server of their own)."""
    shared = [i for i in instances if not needs_isolation(i)]
    return shared, [i for i in instances if needs_isolation(i)]


_TOKEN = re.compile(r"\s*(\(|\)|\band\b|\bor\b|\bnot\b|[^\s()]+)")


@dataclass
class Loaded:
    scenarios: list[Scenario] = field(default_factory=list)
    errors: list[ScenarioError] = field(default_factory=list)
    files: int = 0
    # YAML files of the directories given that are not scenarios: (shown path, why).
    skipped: list[tuple[str, str]] = field(default_factory=list)


def load_paths(paths: Iterable[Path], credentials: Credentials | None) -> Loaded:
    files, errors, skipped = discover(paths)
    loaded = Loaded(errors=list(errors), files=len(files))
    loaded.skipped = [(_display(path), why) for path, why in skipped]
    check = credentials.check if credentials is not None else None
    for path in files:
        try:
            loaded.scenarios.append(load_file(path, check, _display(path)))
        except ScenarioFileError as exc:
            loaded.errors += exc.errors
    return loaded


def _display(path: Path) -> str:
    """A path as the user would write it: relative to the working directory when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def keyword_filter(expression: str) -> Callable[[Instance], bool]:
    """pytest-like -k: words match substrings of `path::name[cell]` and tags, case-insensitively,
    combined with and / or / not and parentheses."""
    tokens = _TOKEN.findall(expression)
    if not tokens:
        raise ValueError("empty -k expression")
    words: list[str] = []
    code = []
    for token in tokens:
        if token in ("(", ")", "and", "or", "not"):
            code.append(token)
        else:
            words.append(token.lower())
            code.append(f"w[{len(words) - 1}]")
    program = " ".join(code)
    try:
        compiled = compile(program, "-k", "eval")
        eval(compiled, {"__builtins__": {}}, {"w": [True] * len(words)})
    except SyntaxError:
        raise ValueError(f"cannot parse -k {expression!r}") from None

    def matches(instance: Instance) -> bool:
        haystack = " ".join([instance.node_id, *instance.scenario.tags]).lower()
        flags = [word in haystack for word in words]
        return bool(eval(compiled, {"__builtins__": {}}, {"w": flags}))

    return matches


def run_instances(
    instances: list[Instance],
    reporter: Reporter,
    credentials: Credentials,
    base_url: str | None,
    api_key: str | None,
    coverage: list[dict[str, Any]] | None = None,
    namespace: str | None = None,
) -> tuple[list[InstanceResult], list[float]]:
    """Results, and the start time (ms) of each in-process simulator booted. With `coverage` (a
    list), each in-process simulator's GET /_sim/coverage is appended to it before it stops (a
    --base-url server's is read by the caller after the run). `namespace` (with `base_url`):
    run in that namespace, or with `auto` each instance in a fresh namespace of its own,
    deleted after it."""
    results: list[InstanceResult] = []
    starts: list[float] = []
    default = credentials.default(api_key)
    run_id = None
    for instance in instances:
        if base_url is not None and namespace not in (None, "default"):
            with in_namespace(base_url, credentials, default, namespace, api_key) as space:
                runner = Runner(space.base_url, space.credentials, space.default, reporter, run_id)
                results.append(runner.run(instance))
        elif base_url is not None:
            runner = Runner(base_url, credentials, default, reporter, run_id)
            results.append(runner.run(instance))
        else:
            from payorch_cli.scenario.host import host

            simulator = host().start()
            starts.append(simulator.start_ms)
            try:
                runner = Runner(simulator.base_url, credentials, default, reporter, run_id)
                results.append(runner.run(instance))
                if coverage is not None:
                    # Coverage is per merchant: the run's own server, every merchant's counts.
                    coverage.extend(merchants_coverage(simulator.base_url, credentials, default))
            finally:
                simulator.stop()
        run_id = runner.run_id  # one ${run.id} for the whole run
    return results, starts


@dataclass
class Space:
    """Where a scenario runs inside a namespace: its base URL (with `/ns/{name}`) and keys."""

    name: str
    base_url: str
    credentials: Credentials
    default: Credential


@contextmanager
def in_namespace(
    base_url: str,
    credentials: Credentials,
    default: Credential,
    namespace: str,
    api_key: str | None,
) -> Iterator[Space]:
    """Namespace `namespace` of the server (`auto`: a fresh one, deleted afterwards)."""
    from payorch_cli.client import Client

    key = api_key if api_key and api_key.startswith("sk_test_") else None
    client = Client(base_url, key, namespace="default", tool="scenario")
    fresh = namespace == "auto"
    name = f"scenario-{secrets.token_hex(6)}" if fresh else namespace
    try:
        created = client.namespace_call("PUT" if fresh else "GET", name)
        spaced = credentials.in_namespace(created["keys"])
        own = spaced.by_name.get(default.name) or spaced.by_key.get(default.key or "") or default
        yield Space(name, f"{base_url.rstrip('/')}/ns/{name}", spaced, own)
    finally:
        if fresh:
            with suppress(Exception):  # the run's outcome is what matters; a leftover expires
                client.namespace_call("DELETE", name)
        client.close()


def merchants_coverage(
    base_url: str, credentials: Credentials, default: Credential
) -> list[dict[str, Any]]:
    """Every fixture merchant's coverage of a server (a suspended one's key is refused: none)."""
    from payorch_cli.client import ApiError

    reports = []
    for key in merchant_keys(credentials, default):
        try:
            reports.append(read_coverage(base_url, key))
        except ApiError:
            if key == default.key:
                raise
    return reports


def merchant_keys(credentials: Credentials, default: Credential) -> list[str]:
    """One sandbox secret key per fixture merchant (the default's first, if it is one)."""
    keys: dict[str | None, str] = {}
    if default.key and default.key.startswith("sk_test_"):
        keys[default.merchant_id] = default.key
    for credential in credentials.by_key.values():
        key = credential.key
        if key and key.startswith("sk_test_") and credential.merchant_id not in keys:
            keys[credential.merchant_id] = key
    return list(keys.values()) or [default.key or ""]


def read_coverage(base_url: str, api_key: str | None) -> dict[str, Any]:
    """GET /_sim/coverage of a server, with a sandbox key (the scenario's default if it is one,
    else the fixture sandbox key)."""
    from payorch_cli.client import DEFAULT_API_KEY, Client

    key = api_key if api_key and api_key.startswith("sk_test_") else DEFAULT_API_KEY
    client = Client(base_url, key, tool="scenario")
    try:
        report: dict[str, Any] = client.get("/_sim/coverage")
        return report
    finally:
        client.close()


def check_reachable(base_url: str) -> str | None:
    """None if a server answers at `base_url`, else the reason."""
    from payorch_cli.client import ApiError, Client

    # Tagged, and without a credential nobody's: it shows in no request log nor coverage.
    client = Client(base_url, "none", tool="scenario")
    try:
        client.get("/ping")
    except ApiError as exc:
        if exc.status == 0:
            from payorch_cli.render.errors import error_line

            return error_line(exc)
    finally:
        client.close()
    return None
