"""The payorch server `payorch mcp` starts when no `--base-url` is given: `payorch serve --port 0`
in a temporary data dir, a child process of its own (its start-up runs beside the MCP SDK's
imports on the other core, and the MCP server's thread pool never competes with it for the GIL).
The `Listening on` line (design.md 1.1) gives its URL. Stopping it ends the child with SIGTERM (a
clean shutdown) and removes the data dir; on Linux the child is also told to end if this process
dies without that (PR_SET_PDEATHSIG), so a killed agent leaves no server behind.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass

from payorch import tempdirs

START_TIMEOUT_SECONDS = 30.0
TEMP_PREFIX = "payorch-mcp-"
LISTENING = "Listening on "


class EmbeddedServerError(Exception):
    """The embedded server did not start; the message says why (its own error line)."""


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


@dataclass
class EmbeddedServer:
    process: subprocess.Popen[str]
    data_dir: str
    url: str | None = None

    @classmethod
    def spawn(cls) -> EmbeddedServer:
        """Start the child now; `wait_ready` reads its URL (do other work in between)."""
        # A killed agent's directory is removed by the next start (payorch/tempdirs.py).
        data_dir = str(tempdirs.make(TEMP_PREFIX))
        # -P: the installed payorch, never a payorch_cli directory that happens to be in the cwd.
        command = [sys.executable, "-P", "-m", "payorch_cli.main", "serve", "--port", "0"]
        command += ["--data-dir", os.path.join(data_dir, "data")]
        # Its errors go to a file, not a pipe nobody reads once it listens (a full pipe blocks).
        with open(os.path.join(data_dir, "serve.log"), "w") as log:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )
        return cls(process, data_dir)

    def wait_ready(self, timeout: float = START_TIMEOUT_SECONDS) -> str:
        """The server's URL once it listens; EmbeddedServerError if it ends or hangs first."""
        if self.url is not None:
            return self.url
        stdout = self.process.stdout
        assert stdout is not None
        found: list[str] = []
        reader = threading.Thread(target=lambda: found.append(stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout)
        line = found[0] if found else ""
        if not line.startswith(LISTENING):
            problem = "did not start in time" if not found else "ended before listening"
            self.process.kill()
            self.process.wait()
            err = self._stderr()
            self.stop()
            raise EmbeddedServerError(f"the embedded payorch server {problem}{err}")
        # Its stdout stays open until stop(): `payorch serve` prints nothing after this line,
        # and closing our end would turn any later write of its into a broken pipe.
        self.url = line[len(LISTENING) :].strip()
        return self.url

    def _stderr(self) -> str:
        with contextlib.suppress(OSError):
            with open(os.path.join(self.data_dir, "serve.log")) as log:
                text = log.read().strip()
            return f": {text.splitlines()[-1]}" if text else ""
        return ""

    def stop(self) -> None:
        """End the server (clean shutdown, then kill after 5 s) and remove its data dir."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            with contextlib.suppress(OSError, ValueError):
                self.process.stdout.close()
        shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> EmbeddedServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
