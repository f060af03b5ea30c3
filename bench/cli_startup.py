"""How fast the CLI starts: `payorch --help`, every command's `--help`, `payorch keys --json`, and
commands that talk to a server (`clock show`, `trigger payment.completed`, against a `payorch
serve` this script starts).

Each is run as a user runs it (a new interpreter, `python -m payorch_cli.main`), --rounds times
after one warm-up (bytecode cached), and printed as min/median/max wall time and the median CPU
time of the process, against two baselines from the same run: the bare interpreter
(`python -c pass`) and the interpreter importing typer (what any typer CLI pays before its own
code). The target (issue 9) is under 0.3 s for everything but `serve` and `tui`.

    python bench/cli_startup.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import serve_cmd, start, stop

COMMANDS: list[tuple[str, list[str]]] = [
    ("payorch --help", ["--help"]),
    *(
        (f"payorch {name} --help", [*name.split(), "--help"])
        for name in (
            "keys",
            "listen",
            "webhooks",
            "simulate",
            "simulate payment",
            "trigger",
            "clock",
            "clock advance",
            "scenario",
            "scenario run",
            "openapi",
        )
    ),
    ("payorch keys --json", ["keys", "--json"]),
]
AGAINST_A_SERVER: list[tuple[str, list[str]]] = [
    ("payorch clock show", ["clock", "show"]),
    ("payorch trigger payment.completed", ["trigger", "payment.completed"]),
]
BASELINES: list[tuple[str, list[str]]] = [
    ("python -c pass", ["-c", "pass"]),
    ("python -c 'import typer'", ["-c", "import typer"]),
]


def timed(args: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run of the interpreter with `args`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    subprocess.run([sys.executable, *args], check=True, capture_output=True, timeout=60)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(label: str, args: list[str], rounds: int) -> float:
    timed(args)  # warm-up: bytecode written, files in the page cache
    runs = [timed(args) for _ in range(rounds)]
    walls = [wall for wall, _ in runs]
    median = statistics.median(walls)
    print(
        f"  {label:<32} {min(walls):6.3f} {median:6.3f} {max(walls):6.3f} s"
        f"  CPU {statistics.median(cpu for _, cpu in runs):6.3f} s",
        flush=True,
    )
    return median


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    print("baselines (min / median / max wall, median CPU):")
    bare = measure(*BASELINES[0], args.rounds)
    typer_only = measure(*BASELINES[1], args.rounds)
    print("payorch:")
    medians = [
        measure(label, ["-m", "payorch_cli.main", *argv], args.rounds) for label, argv in COMMANDS
    ]
    with tempfile.TemporaryDirectory() as tmp:
        server, port, _ = start(serve_cmd(Path(tmp) / "data"))
        try:
            url = ["--base-url", f"http://127.0.0.1:{port}"]
            print(f"against payorch serve on port {port}:")
            medians += [
                measure(label, ["-m", "payorch_cli.main", *url, *argv], args.rounds)
                for label, argv in AGAINST_A_SERVER
            ]
        finally:
            stop(server)
    slowest = max(medians)
    print(
        f"slowest median {slowest:.3f} s (target < 0.3 s): {slowest / bare:.1f} x the bare "
        f"interpreter, {slowest - typer_only:+.3f} s over importing typer"
    )


if __name__ == "__main__":
    main()
