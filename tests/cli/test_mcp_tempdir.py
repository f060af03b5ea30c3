"""`payorch mcp` killed with SIGKILL leaves its embedded server's temporary data dir behind (it
cannot remove it); the next `payorch mcp` removes it (issue 31 item 8)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.cli.mcp_session import environment


def _directory_of(pid: int, timeout: float = 60) -> Path:
    """The temporary directory of `payorch mcp` `pid`: its embedded server's `--data-dir`
    (`<directory>/data`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid and b"--data-dir" in argv:
                return Path(argv[argv.index(b"--data-dir") + 1].decode()).parent
        time.sleep(0.1)
    raise AssertionError(f"no embedded server of payorch mcp {pid}")


def _mcp() -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "payorch_cli.main", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
        env=environment(),
    )


def test_a_killed_agents_directory_goes_at_the_next_start() -> None:
    first = _mcp()
    try:
        directory = _directory_of(first.pid)
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        assert directory.exists()  # nobody was left to remove it
        second = _mcp()
        try:
            _directory_of(second.pid)
            assert not directory.exists()
        finally:
            second.terminate()
            second.wait(15)
    finally:
        first.kill()
        first.wait()
