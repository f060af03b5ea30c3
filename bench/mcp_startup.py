"""How fast `payorch mcp` is ready: from starting the process (as an agent does, over stdio) to
the answer of its first `tools/list`, with its embedded server (the default), and with
`--base-url` against a running server (no embedded server to start). Issue 26's target: 1.5 s
with the embedded server.

Baselines from the same run: the bare interpreter (`python -c pass`), the MCP SDK's import alone
(`python -c 'import mcp.server.mcpserver'`), and `payorch serve --port 0` to its `Listening on`
line (what the embedded server costs by itself). The two run side by side on the two cores, so
the figure should sit near the larger of them plus the protocol's handshake.

    python bench/mcp_startup.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from _common import serve_cmd, start, stop
from mcp import Client
from mcp.client.stdio import StdioServerParameters

TARGET_SECONDS = 1.5


def interpreter(args: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of a new interpreter running `args`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    subprocess.run([sys.executable, *args], check=True, capture_output=True)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def serve_to_listening() -> float:
    with tempfile.TemporaryDirectory() as data_dir:
        process, _, took = start(serve_cmd(data_dir))
        stop(process)
    return took


def _stat(pid: int) -> tuple[int, float]:
    """(parent pid, CPU seconds so far) of a process, from /proc (Linux)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu(root: int) -> float:
    """CPU seconds of `payorch mcp` (a child of `root`) and its descendants (the embedded
    server), read while they run. The load of other work on the machine moves
    wall time a lot and this much less."""
    stats: dict[int, tuple[int, float]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stats[int(entry)] = _stat(int(entry))
            except (OSError, IndexError, ValueError):
                continue

    def is_mcp(pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                return b"\0mcp" in cmdline.read()
        except OSError:
            return False

    # The `payorch mcp` child only (the --base-url case's server is a child of this script too).
    frontier = {pid for pid, (parent, _) in stats.items() if parent == root and is_mcp(pid)}
    total = sum(stats[pid][1] for pid in frontier)
    while frontier:
        children = {pid for pid, (parent, _) in stats.items() if parent in frontier}
        total += sum(stats[pid][1] for pid in children)
        frontier = children
    return total


async def first_answers(args: list[str]) -> tuple[float, float, float]:
    """Seconds from the start to the first tools/list's answer, and to the first tool call's
    (sandbox_status, which needs the server: with an embedded one, it waits for it), and the
    CPU seconds spent by `payorch mcp` and its server by the first tools/list."""
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "payorch_cli.main", "mcp", *args]
    )
    began = time.perf_counter()
    async with Client(server) as client:
        tools = (await client.list_tools()).tools
        listed = time.perf_counter() - began
        cpu = tree_cpu(os.getpid())
        result = await client.call_tool("sandbox_status", {})
        called = time.perf_counter() - began
    assert len(tools) == 20 and not result.is_error, (len(tools), result)
    return listed, called, cpu


def first_tools_list(args: list[str]) -> tuple[float, float, float]:
    return asyncio.run(first_answers(args))


def row(name: str, samples: list[float], baseline: float | None = None) -> str:
    median = statistics.median(samples)
    ratio = f"  x{median / baseline:5.2f}" if baseline else ""
    return (
        f"  {name:<52} median {median * 1000:6.0f} ms  min {min(samples) * 1000:6.0f}  "
        f"max {max(samples) * 1000:6.0f}{ratio}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    rounds = parser.parse_args().rounds

    first_tools_list([])  # warm-up: bytecode cached, files in the page cache
    bare = [interpreter(["-c", "pass"])[0] for _ in range(rounds)]
    sdk_runs = [interpreter(["-c", "import mcp.server.mcpserver"]) for _ in range(rounds)]
    sdk = [wall for wall, _ in sdk_runs]
    serve = [serve_to_listening() for _ in range(rounds)]
    embedded = [first_tools_list([]) for _ in range(rounds)]
    with tempfile.TemporaryDirectory() as data_dir:
        server, port, _ = start(serve_cmd(data_dir))
        try:
            url = f"http://127.0.0.1:{port}"
            remote = [first_tools_list(["--base-url", url]) for _ in range(rounds)]
        finally:
            stop(server)

    sdk_median = statistics.median(sdk)
    print(f"payorch mcp start-up, {rounds} rounds (wall time; ratios against the SDK's import)")
    print(row("python -c pass", bare, sdk_median))
    print(row("python -c 'import mcp.server.mcpserver'", sdk, sdk_median))
    print(row("payorch serve --port 0 -> Listening on", serve, sdk_median))
    print(row("payorch mcp -> first tools/list (embedded)", [e[0] for e in embedded], sdk_median))
    print(row("payorch mcp -> first tool call (embedded)", [e[1] for e in embedded], sdk_median))
    print(row("payorch mcp --base-url -> first tools/list", [r[0] for r in remote], sdk_median))
    print(row("payorch mcp --base-url -> first tool call", [r[1] for r in remote], sdk_median))
    print(row("CPU of python -c 'import mcp.server.mcpserver'", [cpu for _, cpu in sdk_runs]))
    print(row("CPU of payorch mcp + its server by the first list", [e[2] for e in embedded]))
    print(row("CPU of payorch mcp by the first list (--base-url)", [r[2] for r in remote]))
    listed = statistics.median(e[0] for e in embedded)
    verdict = "within" if listed <= TARGET_SECONDS else "OVER"
    print(f"target: {TARGET_SECONDS:.1f} s with the embedded server: {verdict}")


if __name__ == "__main__":
    main()
