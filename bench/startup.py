"""Start-up time of `payorch serve` to its "Listening on" line, empty and with N stored payments.

Builds a data dir holding --stored transactions the way a user would (a `payorch serve` filled
with `POST /payments` over keep-alive connections, then stopped with SIGTERM so it compacts),
then starts `payorch serve` on a fresh copy of it --rounds times and prints min/median/max
seconds to "Listening on", and the server's RSS once listening. In the same run: start-up on an
empty data dir, and a bare aiohttp app to listening (same interpreter) as the baseline, with the
ratio to it.

    python bench/startup.py [--stored 50000] [--rounds 5] [--cache /tmp/payorch-startup-50000]

--cache keeps the filled data dir between runs (filling takes a minute or so). The cached dir is
started and stopped once before measuring, so whatever wrote it, the rounds read a data dir in
the format the current code writes.

Byte code: the servers run with PYTHONPYCACHEPREFIX in the run's temp dir and bytecode writing
on, whatever PYTHONDONTWRITEBYTECODE says, so every measured start loads cached .pyc files as any
installed payorch does after its first run (compiling the project's ~90 modules from source would
add ~0.1 s to each start). --no-pyc measures with the environment as it is.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ENV, bare_app_cmd, cpu_s, fill, rss_mb, serve_cmd, start, stop, stored

BASELINE = bare_app_cmd(
    'async def ping(request):\n    return web.json_response({"ok": True})',
    [("GET", "/ping", "ping")],
)


def build(data_dir: Path, count: int) -> None:
    began = time.perf_counter()
    proc, port, _ = start(serve_cmd(data_dir))
    try:
        fill(port, count - stored(port))
        assert stored(port) >= count
    finally:
        stop(proc)
    print(f"filled {data_dir} to {count} transactions in {time.perf_counter() - began:.0f} s")


class Samples:
    """Start-up figures of one kind of server over the rounds."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []
        self.rss: list[float] = []

    def start(self, cmd: list[str]) -> subprocess.Popen[str]:
        proc, _, elapsed = start(cmd)
        self.wall.append(elapsed)
        self.cpu.append(cpu_s(proc.pid))
        self.rss.append(rss_mb(proc.pid))
        return proc

    def line(self, label: str, base: Samples | None) -> str:
        wall = self.wall
        text = (
            f"{label:<32} min {min(wall):.3f} / median {statistics.median(wall):.3f} / "
            f"max {max(wall):.3f} s   CPU {statistics.median(self.cpu):.2f} s"
            f"   RSS {statistics.median(self.rss):.0f} MB"
        )
        if base is not None:
            text += f"   ratio {statistics.median(wall) / statistics.median(base.wall):.1f}"
        return text


def serve_copy(samples: Samples, template: Path, work: Path) -> None:
    """Start `payorch serve` on a fresh copy of `template` (the files are then in the page
    cache, as for any restart), then stop it."""
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(template, work)
    (work / "LOCK").unlink(missing_ok=True)
    stop(samples.start(serve_cmd(work)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stored", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cache", type=Path, help="keep the filled data dir here between runs")
    parser.add_argument(
        "--no-pyc", action="store_true", help="no bytecode cache unless the environment has one"
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="payorch-startup-") as tmp_name:
        tmp = Path(tmp_name)
        if not args.no_pyc:
            ENV.pop("PYTHONDONTWRITEBYTECODE", None)
            ENV["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
        template = tmp / "template"
        if args.cache is not None and (args.cache / "snapshot.json").exists():
            shutil.copytree(args.cache, template)
            print(f"using the data dir cached in {args.cache}")
        else:
            build(template, args.stored)
            if args.cache is not None:
                shutil.rmtree(args.cache, ignore_errors=True)
                shutil.copytree(template, args.cache)
        # One start and stop: the template is now in the format the current code writes (and
        # its files are in the page cache, as they are for any restart); the baseline once too.
        warm, _, _ = start(BASELINE)
        warm.kill()
        warm.wait()
        proc, port, _ = start(serve_cmd(template))
        count = stored(port)
        stop(proc)
        (tmp / "empty-template").mkdir()
        snapshot_mb = sum(f.stat().st_size for f in template.iterdir() if f.is_file()) / 1e6

        # Interleaved, so drift on a shared machine hits all three alike.
        bare, empty, full = Samples(), Samples(), Samples()
        for _ in range(args.rounds):
            proc = bare.start(BASELINE)
            proc.kill()
            proc.wait()
            serve_copy(empty, tmp / "empty-template", tmp / "empty")
            serve_copy(full, template, tmp / "full")

    pyc = "environment's" if args.no_pyc else "cached"
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} cores, {args.rounds} rounds,"
        f" {pyc} bytecode, load average {os.getloadavg()[0]:.1f}; to 'Listening on':"
    )
    print(bare.line("bare aiohttp app", None))
    print(empty.line("payorch serve, empty store", bare))
    print(full.line(f"payorch serve, {count} transactions", bare))
    print(f"(data dir with {count} transactions: {snapshot_mb:.0f} MB)")


if __name__ == "__main__":
    main()
