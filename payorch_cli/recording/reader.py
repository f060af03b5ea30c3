"""Reading a recording (format.py): one record at a time, with one-line refusals.

`open_recording` checks the header and hands back a stream of the records after it, parsed one
line at a time, so a recording of 100,000 exchanges never sits in memory. Every refusal is a
`RecordingError` whose text is one line naming the file and what is wrong with it: not a
recording, from a newer payorch, or cut mid-line (a line that is not whole JSON).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from payorch_cli.recording.format import FORMAT, VERSION, Header

KINDS = frozenset({"exchange", "webhook", "end"})


class RecordingError(Exception):
    """A file that cannot be read as a recording; the text is the one line to print."""


@dataclass
class Recording:
    """An open recording: its header, and `records()` to stream the rest once."""

    path: Path
    header: Header
    _file: TextIO

    def records(self) -> Iterator[dict[str, Any]]:
        """The records after the header, in the file's order; RecordingError on a bad line."""
        for number, line in enumerate(self._file, start=2):
            if not line.strip():
                continue
            record = _parse(self.path, number, line)
            if not isinstance(record, dict) or record.get("kind") not in KINDS:
                raise RecordingError(
                    f"{self.path}:{number}: not a record of a payorch recording "
                    f"(a line needs a `kind` of {', '.join(sorted(KINDS))})"
                )
            yield record

    def lines(self) -> Iterator[str]:
        """The raw lines after the header, for a first pass before `records()` (which then
        reads from the first record again): drift's look-ahead for endpoint answers."""
        start = self._file.tell()
        try:
            while line := self._file.readline():
                yield line
        finally:
            self._file.seek(start)

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> Recording:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _parse(path: Path, number: int, line: str) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        whole = line.endswith("\n")
        why = "not whole JSON" if whole else "cut mid-line (the file ends inside a record)"
        raise RecordingError(f"{path}:{number}: {why}; the recording is damaged") from None


def open_recording(path: Path) -> Recording:
    """Open `path` and check its header; RecordingError (one line) when it is not a recording
    this payorch can read. A directory is taken as `payorch proxy --out DIR`."""
    from payorch_cli.recording.format import EXCHANGES_FILE

    if path.is_dir():
        path = path / EXCHANGES_FILE
    try:
        file = path.open(encoding="utf-8", errors="replace")
        first = file.readline()
    except FileNotFoundError:
        raise RecordingError(f"{path}: no such file") from None
    except OSError as exc:
        raise RecordingError(
            f"{path}: not a payorch recording ({exc.__class__.__name__})"
        ) from None
    try:
        header = json.loads(first)
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        file.close()
        raise RecordingError(
            f"{path}: not a payorch recording (its first line is not a {FORMAT} header)"
        )
    version = header.get("version")
    if not isinstance(version, int) or version > VERSION:
        file.close()
        raise RecordingError(
            f"{path}: a recording of format version {version}, from a newer payorch; this one "
            f"reads up to version {VERSION} (upgrade payorch)"
        )
    return Recording(path, header, file)  # type: ignore[arg-type]  # a checked dict, as Header
