"""The recording's own process: redaction, the file and the scenario, away from the proxy's event
loop. Redacting a 40 KB page of payments takes tens of milliseconds of Python; done in the
proxy's loop it held the next request back by as much (bench/proxy_overhead.py). The proxy sends
each record as it completes over a pipe, from a thread, and goes on serving.

Messages to the child: a `RawExchange` or a `RawWebhook` (recorded), `FLUSH` (the `end` line and
the scenario; the child answers with the counts), `STOP` (the same, then it exits). The child
ignores SIGINT, SIGTERM and SIGUSR1 (a Ctrl-C or a supervisor's signal reaches the whole process
group: the proxy acts on them, and sends STOP or FLUSH) and ends on its own when the pipe closes
(the proxy was killed): every whole line is on disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import signal
import sys
import tempfile
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from payorch_cli.proxy.recorder import RawExchange, RawWebhook
from payorch_cli.recording import format as fmt

FLUSH = "flush"
STOP = "stop"


@dataclass(frozen=True, slots=True)
class Settings:
    directory: Path
    upstream: str
    fields: tuple[str, ...]
    body_limit: int
    generator: str


def child(conn: Connection, settings: Settings, proxy_end: Connection | None = None) -> None:
    """The recording process: records in, lines out, a summary per flush. `proxy_end`: the
    proxy's end of the pipe as a fork inherits it, closed here, or the pipe would never tell
    this process that the proxy is gone."""
    if proxy_end is not None:
        proxy_end.close()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    from payorch_cli.proxy.recorder import Recorder
    from payorch_cli.proxy.redact import Redactor
    from payorch_cli.scenario.credentials import Credentials

    credentials = Credentials.builtin()

    def name_of(key: str) -> str | None:
        found = credentials.by_key.get(key)
        return found.name if found is not None else None

    redactor = Redactor(settings.fields, name_of)
    recorder = Recorder(
        settings.directory, settings.upstream, redactor, settings.body_limit, settings.generator
    )
    lost = 0
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            break  # the proxy is gone: what is written stays
        if message in (FLUSH, STOP):
            conn.send(_flush(recorder, settings.directory, lost))
            if message == STOP:
                break
            continue
        try:
            if isinstance(message, RawExchange):
                recorder.exchange(message)
            elif isinstance(message, RawWebhook):
                recorder.webhook(message)
        except (OSError, ValueError, TypeError, RecursionError) as exc:
            lost += 1
            if lost == 1:
                sys.stderr.write(f"payorch proxy: a record could not be written ({exc})\n")
    recorder.close()


def _flush(recorder: Any, directory: Path, lost: int) -> dict[str, Any]:
    from payorch_cli.proxy.scenario import build

    recorder.end()
    upto = recorder.path.stat().st_size
    built = build(recorder.path, dict(recorder.redactor.names), upto=upto)
    fd, temporary = tempfile.mkstemp(prefix=f".{fmt.SCENARIO_FILE}.", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(built.text)
        os.replace(temporary, directory / fmt.SCENARIO_FILE)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return {
        "exchanges": recorder.exchanges,
        "webhooks": recorder.webhooks,
        "steps": built.steps,
        "notComparable": built.not_comparable,
        "tools": built.tools,
        "lost": lost,
        "recording": str(recorder.path),
        "scenario": str(directory / fmt.SCENARIO_FILE),
    }


# Records with at most this many body bytes go down the pipe from the loop itself; the pipe's
# buffer (64 KiB on Linux) holds such a record, with its headers, without blocking.
INLINE_RECORD = 16 * 1024


class Writer:
    """The proxy's side: start the child, send it records in order, flush, stop."""

    def __init__(self, settings: Settings) -> None:
        method = "fork" if sys.platform == "linux" else "spawn"
        context: Any = multiprocessing.get_context(method)  # BaseContext types no Process
        self._conn, theirs = context.Pipe()
        self._process = context.Process(
            target=child,
            args=(theirs, settings, self._conn if method == "fork" else None),
            name="payorch-proxy-recorder",
            daemon=True,
        )
        self._process.start()
        theirs.close()

    async def send(self, record: RawExchange | RawWebhook, size: int) -> None:
        """One record of `size` body bytes. A small one is sent on the loop: the pipe's buffer
        takes it at once, where a thread's hand-off cost each small exchange about 2 ms of
        latency (bench/proxy_overhead.py); a large one from a thread, so pickling it and a
        full pipe never hold the event loop. One caller at a time: the writer task."""
        if size <= INLINE_RECORD:
            self._conn.send(record)
        else:
            await asyncio.to_thread(self._conn.send, record)

    async def flush(self, stop: bool = False) -> dict[str, Any]:
        await asyncio.to_thread(self._conn.send, STOP if stop else FLUSH)
        answer: dict[str, Any] = await asyncio.to_thread(self._conn.recv)
        return answer

    def close(self) -> None:
        self._conn.close()
        self._process.join(timeout=30)
        if self._process.is_alive():
            self._process.kill()
