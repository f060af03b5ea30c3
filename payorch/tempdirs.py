"""Private temporary directories that a killed process does not leave behind for good.

`payorch serve --workers` keeps nginx's configuration, pid, logs and buffers in one, and
`payorch mcp` its embedded server's data dir. Each removes its own on the way out, but a process
killed with SIGKILL (or a crash, or the machine going down) cannot, and every start made a new
one (issue 31). So each directory names its owner (`owner.pid`), and making a new one first
removes those of the same kind whose owner is gone: no process of any `*.pid` file inside is
alive (nginx's own `nginx.pid` counts, so a directory whose nginx still runs is kept).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from pathlib import Path

OWNER_FILE = "owner.pid"
# A directory with no pid file yet may be one another start has just made: left alone this long.
GRACE_SECONDS = 60.0


def make(prefix: str, *, base: str | None = None) -> Path:
    """A new private directory `<tmp>/<prefix>...`, owned by this process; stale ones of the
    same prefix (their owner gone) removed first."""
    root = Path(base or tempfile.gettempdir())
    remove_stale(root, prefix)
    directory = Path(tempfile.mkdtemp(prefix=prefix, dir=root))
    (directory / OWNER_FILE).write_text(f"{os.getpid()}\n")
    return directory


def remove_stale(root: Path, prefix: str) -> list[Path]:
    """Remove this user's directories `root/prefix*` that no live process owns; those removed."""
    removed = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(root):
            if not entry.name.startswith(prefix) or not entry.is_dir(follow_symlinks=False):
                continue
            path = Path(entry.path)
            with contextlib.suppress(OSError):
                if entry.stat(follow_symlinks=False).st_uid == os.getuid() and _stale(path):
                    shutil.rmtree(path, ignore_errors=True)
                    removed.append(path)
    return removed


def _stale(directory: Path) -> bool:
    pids = [_pid(file) for file in directory.glob("*.pid")]
    known = [pid for pid in pids if pid is not None]
    if not known:
        return time.time() - directory.stat().st_mtime > GRACE_SECONDS
    return not any(_alive(pid) for pid in known)


def _pid(file: Path) -> int | None:
    try:
        text = file.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: alive
    return True
