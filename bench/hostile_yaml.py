"""How fast hostile YAML is refused, and what the bounds cost a normal file (issue 23 item 4).

Prints, for each file, the best of N runs of `load_text` (the parse and checks behind `payorch
scenario validate|run`), and the whole `payorch scenario validate` process once; then the
bounded composer against libyaml's own on the largest scenario of the repository (the cost of
counting aliases and depth on every file). Usage: .venv/bin/python bench/hostile_yaml.py [N]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yaml

from payorch.bounded import BoundedSafeLoader
from payorch_cli.scenario.loader import load_text
from payorch_cli.scenario.source import ScenarioFileError

ROOT = Path(__file__).resolve().parents[1]


def bomb() -> str:
    lines = ["scenario: bomb", "vars:", '  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol"]']
    previous = "a"
    for name in "bcdefghi":
        lines.append(f"  {name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
        previous = name
    lines += ["steps:", f"  - request: {{method: POST, path: /me, body: *{previous}}}"]
    return "\n".join(lines) + "\n"


def deep() -> str:
    return (
        "scenario: deep\nsteps:\n  - request: {method: POST, path: /me, body: "
        + "[" * 30_000
        + "]" * 30_000
        + "}\n"
    )


def best(runs: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return min(times)


def refuse(text: str) -> Callable[[], object]:
    def work() -> None:
        try:
            load_text(text, "hostile.yaml")
        except ScenarioFileError:
            return
        raise AssertionError("not refused")

    return work


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    largest = max((ROOT / "scenarios").glob("*.yaml"), key=lambda p: p.stat().st_size)
    good = largest.read_text()
    cases = {f"alias bomb ({len(bomb())} bytes)": bomb(), "30,000-deep [[[": deep()}
    for label, text in cases.items():
        print(f"{label}: refused by load_text in {best(runs, refuse(text)) * 1000:.1f} ms")
    print(
        f"{largest.name} ({len(good)} bytes): loaded in "
        f"{best(runs, lambda: load_text(good, largest.name)) * 1000:.1f} ms"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for label, text in (("alias bomb", bomb()), ("good file", good)):
            path = Path(tmp) / "f.yaml"
            path.write_text(text)
            started = time.perf_counter()
            done = subprocess.run(
                [str(Path(sys.executable).parent / "payorch"), "scenario", "validate", str(path)],
                capture_output=True,
                check=False,
            )
            print(
                f"`payorch scenario validate` of the {label}: exit {done.returncode} in "
                f"{time.perf_counter() - started:.2f} s (whole process)"
            )
    plain = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    big = "scenario: big\nsteps:\n" + good.split("steps:", 1)[1] * 200
    base = best(runs, lambda: plain(big).get_single_node())
    bounded = best(runs, lambda: BoundedSafeLoader(big).get_single_node())
    print(
        f"composing {len(big) // 1024} KB: libyaml {base * 1000:.1f} ms, bounded "
        f"{bounded * 1000:.1f} ms (B/A {bounded / base:.2f})"
    )


if __name__ == "__main__":
    main()
