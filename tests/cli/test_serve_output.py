"""What `payorch serve` prints: the `Listening on` line first and exactly so; on a terminal the
next steps under it (not when piped, not with --quiet); one line per request with
--log-requests. Real processes; the terminal is a pseudo-terminal."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

from tests.cli.test_listen import Lines
from tests.cli.test_serve import PAYORCH, SANDBOX_SK

LISTENING = re.compile(r"Listening on http://127\.0\.0\.1:\d+")


class Terminal:
    """A `payorch serve` whose standard output is a terminal, read line by line."""

    def __init__(self, *args: str) -> None:
        master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            [*PAYORCH, "serve", "--port", "0", *args],
            stdout=slave,
            stderr=subprocess.PIPE,
            env={**os.environ, "COLUMNS": "100"},
        )
        os.close(slave)
        self.master = master
        self.buffer = ""
        self.lines: list[str] = []

    def line(self, timeout: float = 15.0) -> str:
        deadline = time.monotonic() + timeout
        while "\n" not in self.buffer:
            left = deadline - time.monotonic()
            assert left > 0, f"no whole line; so far {self.lines} + {self.buffer!r}"
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                self.buffer += os.read(self.master, 4096).decode()
        line, self.buffer = self.buffer.split("\n", 1)
        self.lines.append(line.rstrip("\r"))
        return self.lines[-1]

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=15)
        finally:
            os.close(self.master)


def ping(url: str, tool: str | None = None, path: str = "/ping") -> None:
    headers = {"Authorization": f"Bearer {SANDBOX_SK}"}
    if tool is not None:
        headers["X-Payorch-Tool"] = tool
    request = urllib.request.Request(url + "/api/v1" + path, headers=headers)
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


def test_on_a_terminal_the_next_steps_follow_the_listening_line(tmp_path: Path) -> None:
    term = Terminal("--data-dir", str(tmp_path / "data"))
    try:
        first = term.line()
        assert LISTENING.fullmatch(first), first
        url = first.split()[-1]
        while not term.line().startswith("  Stop"):
            pass
    finally:
        assert term.stop() == 0
    steps = "\n".join(term.lines[1:])
    assert f"Sandbox key   {SANDBOX_SK}  (shp_mazul_tienda; every key: payorch keys)" in steps
    assert f"payorch tui --base-url {url}" in steps
    assert f"payorch logs tail --base-url {url}" in steps
    assert f"Docs          {url}/  (OpenAPI: {url}/api/v1/openapi.json)" in steps
    assert "--quiet" in steps


def test_quiet_leaves_only_the_listening_line_and_log_requests_prints_each(
    tmp_path: Path,
) -> None:
    term = Terminal("--data-dir", str(tmp_path / "data"), "--quiet", "--log-requests")
    try:
        first = term.line()
        assert LISTENING.fullmatch(first), first
        ping(first.split()[-1], tool="tui", path="/me")  # payorch's own: not printed
        ping(first.split()[-1])
        request_line = term.line()  # the very next line: no next steps, no tool's request
    finally:
        assert term.stop() == 0
    # COLUMNS=100: the tail's layout at that width (duration, no merchant), shorter than it.
    assert request_line.split()[1:4] == ["GET", "/ping", "200"], request_line
    assert re.search(r"\dms req_[0-9a-f]{24}$", request_line) and len(request_line) < 100


def test_piped_it_prints_the_listening_line_alone_or_with_each_request(tmp_path: Path) -> None:
    plain = subprocess.Popen(
        [*PAYORCH, "serve", "--port", "0", "--data-dir", str(tmp_path / "a")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = Lines(plain)
    ping(lines.until("Listening on ").split()[-1])
    plain.send_signal(signal.SIGTERM)
    assert plain.wait(timeout=15) == 0
    lines.until_closed()
    assert len(lines.seen) == 1 and lines.rest() == []

    logging = subprocess.Popen(
        [*PAYORCH, "serve", "--port", "0", "--data-dir", str(tmp_path / "b"), "--log-requests"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = Lines(logging)
    try:
        url = lines.until("Listening on ").split()[-1]
        ping(url)
        # Piped: every column (into a file, the merchant and the simulated time are wanted).
        line = lines.until("/ping")
    finally:
        logging.send_signal(signal.SIGTERM)
    assert logging.wait(timeout=15) == 0
    assert " sim " in line and " 200 " in line and "mer_mercadoazul/sandbox" in line
    assert LISTENING.fullmatch(lines.seen[0])


def test_log_requests_with_the_request_log_off_is_a_usage_error(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    result = subprocess.run(
        [
            *PAYORCH,
            "serve",
            "--port",
            "0",
            "--data-dir",
            data,
            "--log-requests",
            "--request-log",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 2 and result.stdout == ""
    assert "--log-requests prints the request log, which --request-log 0 turns off" in (
        result.stderr
    )
