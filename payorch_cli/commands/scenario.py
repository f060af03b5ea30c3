"""`payorch scenario run|validate|schema`: the scenario language from the command line.

Exit statuses: 0 every scenario passed; 1 one failed; 2 a file is invalid (nothing ran) or
nothing matched; 3 the --base-url server is unreachable.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from payorch_cli.options import ApiKey, BaseUrl, ExitStatus, Json, command_group, resolve

app = command_group("Run and check scenario files (docs/scenarios.md).")

Paths = Annotated[
    list[Path],
    typer.Argument(
        metavar="PATHS",
        help="Scenario files, or directories searched for *.yaml with `scenario:`.",
    ),
]


def _fail(message: str, status: ExitStatus) -> typer.Exit:
    sys.stderr.write(message.rstrip("\n") + "\n")
    return typer.Exit(status)


def _load(paths: list[Path]):
    from payorch_cli.scenario.credentials import Credentials
    from payorch_cli.scenario.suite import load_paths

    credentials = Credentials.builtin()
    loaded = load_paths(paths, credentials)
    if loaded.errors:
        lines = [str(e) for e in loaded.errors]
        files = len({e.loc.file for e in loaded.errors})
        lines.append(f"{len(loaded.errors)} problem(s) in {files} file(s); nothing was run.")
        raise _fail("\n".join(lines), ExitStatus.USAGE)
    return loaded, credentials


@app.command("run")
def run(
    ctx: typer.Context,
    paths: Paths,
    keyword: Annotated[
        str | None,
        typer.Option(
            "-k",
            help="Only scenarios whose path::name[cell] or tags match, e.g. "
            "'refund and not partial'.",
        ),
    ] = None,
    junit: Annotated[
        Path | None, typer.Option("--junit", help="Also write a JUnit XML report here.")
    ] = None,
    coverage: Annotated[
        bool,
        typer.Option(
            "--coverage",
            help="Print the transition coverage after the run: the --base-url server's "
            "(GET /_sim/coverage), or the sum over the in-process simulators.",
        ),
    ] = False,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Run scenarios. Without --base-url each one gets its own in-process simulator; with it,
    `--namespace auto` runs each one in a fresh namespace of that server (deleted after)."""
    options = resolve(ctx, base_url, api_key, as_json)
    instances, credentials = _select(paths, keyword)
    namespace = _namespace(options.namespace)
    isolated: list[Any] = []
    if options.base_url:
        instances, isolated = _on_server(ctx, options.base_url, instances, namespace)
    reporter, console = _reporter(options.json)
    started = time.perf_counter()
    reports: list[dict[str, Any]] | None = [] if coverage else None
    try:
        results, starts = _execute(instances, reporter, credentials, options, reports, namespace)
    finally:
        reporter.close()
    ran = _Run(results, starts, time.perf_counter() - started, isolated, reports)
    skip_reason = f"{_isolated_reason()}; {_isolation_advice(ctx)}"
    if junit is not None:
        from payorch_cli.scenario.reporters import write_junit

        write_junit(str(junit), results, ran.seconds, [(i, skip_reason) for i in isolated])
    if options.json:
        _print_json(ran, options.base_url, skip_reason)
    else:
        _print_summary(ctx, ran, options.base_url, console)
    raise typer.Exit(ExitStatus.OK if all(r.passed for r in results) else ExitStatus.ERROR)


@dataclass(frozen=True)
class _Run:
    """What a run gives its reports: the results, the in-process starts' milliseconds, its
    length, the isolated scenarios a shared server skipped, the coverage reports (or None)."""

    results: list[Any]
    starts: list[float]
    seconds: float
    isolated: list[Any]
    reports: list[dict[str, Any]] | None

    @property
    def coverage(self) -> dict[str, Any] | None:
        from payorch_cli.render.coverage import merge

        return merge(self.reports) if self.reports else None


def _select(paths: list[Path], keyword: str | None) -> tuple[list[Any], Any]:
    """The scenario instances (matrix cells) of the files that `-k` selects; exit 2 for none."""
    from payorch_cli.scenario.suite import keyword_filter

    loaded, credentials = _load(paths)
    instances = [i for s in loaded.scenarios for i in s.instances()]
    if keyword:
        try:
            matches = keyword_filter(keyword)
        except ValueError as exc:
            raise _fail(f"payorch scenario run: {exc}", ExitStatus.USAGE) from None
        instances = [i for i in instances if matches(i)]
    if not instances:
        what = f"matched -k {keyword!r}" if keyword else f"found in {', '.join(map(str, paths))}"
        raise _fail(f"payorch scenario run: no scenario {what}", ExitStatus.USAGE)
    return instances, credentials


def _on_server(
    ctx: typer.Context, base_url: str, instances: list[Any], namespace: str | None
) -> tuple[list[Any], list[Any]]:
    """The instances a shared server runs and the isolated ones it skips (none with
    `--namespace auto`, where each has a namespace of its own); exit 2 or 3 when none can run."""
    from payorch_cli.scenario.suite import check_reachable, split_isolated

    isolated: list[Any] = []
    if namespace != "auto":
        instances, isolated = split_isolated(instances)
    if not instances:
        raise _fail(
            f"payorch scenario run: every selected scenario ({len(isolated)}) is "
            f"{_isolated_reason()}, and --base-url shares one; {_isolation_advice(ctx)}",
            ExitStatus.USAGE,
        )
    problem = check_reachable(base_url)
    if problem:
        raise _fail(f"payorch scenario run: {problem}", ExitStatus.UNREACHABLE)
    return instances, isolated


def _reporter(as_json: bool) -> tuple[Any, Any]:
    """The live view on a terminal, plain lines elsewhere, nothing for --json (and the console
    the coverage tables go to)."""
    from payorch_cli.scenario.reporters import LiveReporter, PlainReporter, QuietReporter

    if as_json:
        return QuietReporter(), None
    from rich.console import Console

    console = Console()
    return (LiveReporter(console) if console.is_terminal else PlainReporter()), console


def _execute(
    instances: list[Any],
    reporter: Any,
    credentials: Any,
    options: Any,
    reports: list[dict[str, Any]] | None,
    namespace: str | None,
) -> tuple[list[Any], list[float]]:
    from payorch_cli.scenario.suite import read_coverage, run_instances

    results, starts = run_instances(
        instances,
        reporter,
        credentials,
        options.base_url,
        options.api_key,
        reports,
        namespace=namespace,
    )
    if reports is not None and options.base_url:
        reports.append(read_coverage(options.base_url, credentials.default(options.api_key).key))
    return results, starts


def _print_json(ran: _Run, base_url: str | None, skip_reason: str) -> None:
    from payorch_cli.render.objects import to_json
    from payorch_cli.scenario.reporters import result_json

    document = {
        "passed": sum(r.passed for r in ran.results),
        "failed": sum(not r.passed for r in ran.results),
        "seconds": round(ran.seconds, 3),
        "server": base_url or "in-process",
        "inProcessStartMs": [round(s, 1) for s in ran.starts],
        "scenarios": [result_json(r) for r in ran.results],
        "skipped": [{"scenario": i.node_id, "reason": skip_reason} for i in ran.isolated],
    }
    if ran.coverage is not None:
        document["coverage"] = ran.coverage
    sys.stdout.write(to_json(document) + "\n")


def _print_summary(ctx: typer.Context, ran: _Run, base_url: str | None, console: Any) -> None:
    from payorch_cli.scenario.report import summary_line

    summary = summary_line(ran.results, ran.seconds, len(ran.isolated))
    starts = ran.starts
    where = (
        f"against {base_url}"
        if base_url
        else f"in-process simulator start: {starts[0]:.0f} ms for the first (imports and "
        f"fixtures)"
        + (f", {sum(starts[1:]) / (len(starts) - 1):.1f} ms each after" if starts[1:] else "")
    )
    sys.stdout.write(f"{summary}; {where}\n")
    for r in (r for r in ran.results if not r.passed):
        at = r.failed_step.step.loc if r.failed_step else r.error
        sys.stdout.write(f"  failed: {r.instance.node_id}  ({at})\n")
    if ran.isolated:
        sys.stdout.write(
            f"  skipped {len(ran.isolated)} scenario(s) {_isolated_reason()} (--base-url shares "
            f"one); {_isolation_advice(ctx)}:\n"
        )
        for instance in ran.isolated:
            sys.stdout.write(f"  skipped: {instance.node_id}\n")
    if ran.coverage is not None:
        _print_coverage(ran.coverage, console)


def _isolated_reason() -> str:
    from payorch_cli.scenario.suite import ISOLATED_REASON  # imported when used: a fast --help

    return ISOLATED_REASON


def _namespace(option: str | None) -> str | None:
    from payorch_cli.client import NAMESPACE_ENV

    return option or os.environ.get(NAMESPACE_ENV) or None


def _isolation_advice(ctx: typer.Context) -> str:
    """What to do about scenarios that need a server of their own: without --base-url each gets
    a fresh in-process simulator; `--namespace auto` (a namespace of its own on the shared
    server) is offered only where this command has that option."""
    del ctx  # every command that runs scenarios against a server takes --namespace (options.py)
    return (
        "run them without --base-url (a fresh simulator each) or with --namespace auto (a "
        "namespace each)"
    )


def _print_coverage(report: dict[str, Any], console: Any) -> None:
    """The coverage after a run: tables on a terminal, the totals and what was never reached
    elsewhere (CI logs)."""
    from payorch_cli.render.coverage import coverage_tables, coverage_text

    if console is not None and console.is_terminal:
        console.print(coverage_tables(report))
    else:
        sys.stdout.write(coverage_text(report) + "\n")


@app.command("validate")
def validate(paths: Paths) -> None:
    """Check scenario files without running them.

    Every problem with file:line:column; nothing is sent.
    """
    loaded, _ = _load(paths)
    skipped = [f"skip  {path}: {why}" for path, why in loaded.skipped]
    if not loaded.scenarios:
        lines = [
            f"payorch scenario validate: no scenario found in {', '.join(map(str, paths))}",
            *skipped,
        ]
        raise _fail("\n".join(lines), ExitStatus.USAGE)
    for scenario in loaded.scenarios:
        cells = len(scenario.instances())
        matrix = f", {cells} matrix cells" if scenario.matrix else ""
        sys.stdout.write(
            f"ok    {scenario.path}: {scenario.name} ({len(scenario.steps)} steps{matrix})\n"
        )
    for line in skipped:
        sys.stdout.write(line + "\n")
    if skipped:
        sys.stdout.write(
            f"{len(loaded.scenarios)} scenario file(s) valid, {len(skipped)} YAML file(s) skipped\n"
        )


@app.command("schema")
def schema(
    path_only: Annotated[
        bool, typer.Option("--path", help="Print where the schema file is instead.")
    ] = False,
) -> None:
    """Print the JSON Schema of scenario files, for editors.

    For `# yaml-language-server: $schema=...`. It enumerates the event types and provider
    behaviours, which the file at `--path` leaves to `payorch scenario validate`.
    """
    from payorch_cli.scenario import SCHEMA_PATH
    from payorch_cli.scenario.schema import render, served

    sys.stdout.write(str(SCHEMA_PATH) + "\n" if path_only else render(served()))
