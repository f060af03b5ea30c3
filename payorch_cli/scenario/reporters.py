"""Where results go while and after scenarios run: a rich live view on a terminal, plain lines
elsewhere (CI logs), nothing but the final JSON under --json, and a JUnit XML file."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import IO, Any, ClassVar
from xml.etree import ElementTree as ET

from payorch_cli.scenario.interpreter import InstanceResult, StepResult
from payorch_cli.scenario.model import Instance, Step
from payorch_cli.scenario.report import failure_lines, instance_failure_lines


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 10 else f"{seconds:.1f} s"


class QuietReporter:
    def instance_started(self, instance: Instance) -> None:
        pass

    def step_started(self, instance: Instance, step: Step) -> None:
        pass

    def step_finished(self, instance: Instance, result: StepResult) -> None:
        pass

    def instance_finished(self, result: InstanceResult) -> None:
        pass

    def close(self) -> None:
        pass


class PlainReporter(QuietReporter):
    """One line per step as it finishes: readable in CI logs and pipes."""

    MARKS: ClassVar[dict[str, str]] = {"passed": "ok  ", "failed": "FAIL", "skipped": "skip"}

    def __init__(self, out: IO[str] | None = None) -> None:
        self.out = out or sys.stdout

    def _write(self, line: str) -> None:
        self.out.write(line + "\n")
        self.out.flush()

    def instance_started(self, instance: Instance) -> None:
        self._write(f"{instance.scenario.path}: {instance.title}")

    def step_finished(self, instance: Instance, result: StepResult) -> None:
        note = f"; {result.note}" if result.note else ""
        self._write(
            f"  {self.MARKS[result.status]}  {result.step.label}  ({_ms(result.duration)}{note})"
        )
        if result.failure is not None:
            for line in failure_lines(result):
                self._write("        " + line)

    def instance_finished(self, result: InstanceResult) -> None:
        if result.error:
            self._write(f"  FAIL  {result.error}")
        self._write(f"  {'PASS' if result.passed else 'FAIL'}  {_ms(result.duration)}")


class LiveReporter(QuietReporter):
    """The current scenario's steps redrawn in place (spinner and timer on the running one);
    each finished scenario is printed for good above it. Only the steps that fit the terminal
    are drawn (the latest, under a count of the earlier ones), each line made once: redrawing
    every finished step 12 times a second made a 1,000-step run 0.3-0.5 s slower on a terminal,
    and a view taller than the terminal was cut short, hiding the running step."""

    def __init__(self, console: Any) -> None:
        from rich.live import Live

        self.console = console
        self.instance: Instance | None = None
        self.done: list[Any] = []  # a rich Text line per finished step
        self.running: tuple[Step, float] | None = None
        self.live = Live(
            console=console, refresh_per_second=12, transient=True, get_renderable=self._renderable
        )
        self.live.start()

    def _line(self, result: StepResult) -> Any:
        from rich.text import Text

        mark, style = {
            "passed": ("✓", "green"),
            "failed": ("✗", "bold red"),
            "skipped": ("-", "dim"),
        }[result.status]
        note = f"  {result.note}" if result.note else ""
        return Text.assemble(
            f"  {mark} ", (result.step.label, style), (f"  {_ms(result.duration)}{note}", "dim")
        )

    def _renderable(self) -> Any:
        from rich.console import Group
        from rich.spinner import Spinner
        from rich.text import Text

        if self.instance is None:
            return Text("")
        parts: list[Any] = [Text(self.instance.title, style="bold")]
        done = self.done[:]  # appended to by the runner's thread
        room = max(self.console.size.height - 3, 2)  # the title, the running step, a margin
        if len(done) > room:
            earlier = len(done) - room + 1
            parts.append(Text(f"  … {earlier} earlier step{'s' * (earlier > 1)}", style="dim"))
            done = done[earlier:]
        parts += done
        if self.running is not None:
            step, since = self.running
            parts.append(
                Spinner(
                    "dots",
                    text=Text.assemble(
                        f" {step.label}", (f"  {_ms(time.perf_counter() - since)}", "dim")
                    ),
                )
            )
        return Group(*parts)

    def instance_started(self, instance: Instance) -> None:
        self.instance, self.done, self.running = instance, [], None

    def step_started(self, instance: Instance, step: Step) -> None:
        self.running = (step, time.perf_counter())

    def step_finished(self, instance: Instance, result: StepResult) -> None:
        self.running = None
        self.done.append(self._line(result))

    def instance_finished(self, result: InstanceResult) -> None:
        from rich.text import Text

        mark = Text("PASS", style="bold green") if result.passed else Text("FAIL", style="bold red")
        head = Text.assemble(
            mark,
            f" {result.instance.title}  ",
            (f"{result.instance.scenario.path}  {_ms(result.duration)}", "dim"),
        )
        self.console.print(head)
        if not result.passed:
            for step in result.steps:
                self.console.print(self._line(step))
            for line in instance_failure_lines(result):
                self.console.print(
                    Text("      " + line, style="red" if line.startswith("  -") else ""),
                    highlight=False,
                )
        self.instance = None

    def close(self) -> None:
        self.live.stop()


def result_json(result: InstanceResult) -> dict[str, Any]:
    failed = result.failed_step
    return {
        "file": result.instance.scenario.path,
        "scenario": result.instance.scenario.name,
        "cell": result.instance.cell,
        "id": result.instance.node_id,
        "status": "passed" if result.passed else "failed",
        "durationMs": round(result.duration * 1000, 1),
        "error": result.error,
        "failure": "\n".join(instance_failure_lines(result)) if not result.passed else None,
        "failedStep": failed.step.label if failed else None,
        "steps": [
            {
                "name": s.step.name,
                "kind": s.step.kind,
                "line": s.step.loc.line,
                "status": s.status,
                "durationMs": round(s.duration * 1000, 1),
                "note": s.note or None,
                "failure": s.failure.message if s.failure else None,
            }
            for s in result.steps
        ],
    }


def write_junit(
    path: str,
    results: list[InstanceResult],
    seconds: float,
    skipped: Sequence[tuple[Instance, str]] = (),
) -> None:
    """One <testcase> per scenario instance: classname the file, name the title; a skipped
    instance (`skipped`: it and why) gets a <skipped> element with the reason."""
    failures = sum(1 for r in results if not r.passed)
    suite = ET.Element(
        "testsuite",
        name="payorch scenarios",
        tests=str(len(results) + len(skipped)),
        failures=str(failures),
        errors="0",
        skipped=str(len(skipped)),
        time=f"{seconds:.3f}",
    )
    for instance, reason in skipped:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=instance.scenario.path,
            name=instance.title,
            time="0.000",
            file=instance.scenario.path,
            line=str(instance.scenario.loc.line),
        )
        ET.SubElement(case, "skipped", message=reason)
    for result in results:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=result.instance.scenario.path,
            name=result.instance.title,
            time=f"{result.duration:.3f}",
            file=result.instance.scenario.path,
            line=str(result.instance.scenario.loc.line),
        )
        if not result.passed:
            lines = instance_failure_lines(result)
            failure = ET.SubElement(
                case,
                "failure",
                message=lines[1].strip() if len(lines) > 1 else (lines[0] if lines else "failed"),
            )
            failure.text = "\n".join(lines)
        steps = "\n".join(f"{s.status:<7} {s.step.label} ({_ms(s.duration)})" for s in result.steps)
        ET.SubElement(case, "system-out").text = steps
    root = ET.Element("testsuites")
    root.append(suite)
    tree = ET.ElementTree(root)
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)
