"""The snapshot file: every document's stored bytes, laid out so loading needs no JSON decoding.

The store keeps each document as its exact JSON bytes.  The snapshot is still one JSON object
``{table: {doc_id: doc}}`` (any JSON tool reads it, and so do older payorch versions, which see
one extra table), but laid out one document per line, so a reader can split it into lines and
keep each document's line as that document's bytes::

    {"#snapshot":{"info":{"format":2,"documents":3,"crc32":1234567}}
    ,"payments":{
    "pay_1":
    {"status":"authorized","amount":"10.00"}
    ,"pay_2":
    {"status":"captured","amount":"5.00"}
    }
    ,"events":{
    "evt_1":
    {"payment":"pay_1"}
    }
    }

The first line opens the object with an ``info`` entry: the format, the number of documents, the
CRC-32 of everything after that line and, from the store, which journal bytes the snapshot already
holds (``journal``: ``JournalMark``; absent in snapshots of older versions).  Then each table:
``,"name":{``, alternating doc-id lines (``"id":``, later ``,"id":``) and document lines, and
``}``; a last ``}`` closes the object.  No line can be mistaken for another: compact JSON (what
orjson writes) never holds a raw newline, document lines start with ``{``, id lines with ``"`` or
``,"``, and only a table's end is the line ``}``.

Loading is one ``split`` (the document lines *are* the documents' bytes, exact-size), one JSON
decode of each table's doc ids, and a CRC over the file, which stands in for the validation a
full decode used to give: the file is written whole and renamed into place, so a mismatch means
the disk or a person changed it.  The table name ``#snapshot`` is reserved for the ``info``
entry.

A snapshot written by earlier versions (``{table: {doc_id: doc}}`` on one line) is still read,
by decoding it whole; the store rewrites it in this format on open (``LoadedSnapshot.legacy``).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from itertools import chain, repeat
from typing import Any, Final, NamedTuple

import orjson

from simulator.memory import no_gc

__all__ = [
    "FORMAT",
    "INFO_TABLE",
    "Encoded",
    "JournalMark",
    "LoadedSnapshot",
    "SnapshotError",
    "compact_bytes",
    "decode_snapshot",
    "encode_snapshot",
    "reheader",
]

FORMAT: Final = 2
INFO_TABLE: Final = "#snapshot"
_HEAD: Final = b'{"#snapshot":'
_CHUNK: Final = 1_000  # documents per piece of encode_snapshot's result

# In memory each document is kept as its encoded JSON bytes: about a fifth of the size of the
# decoded dict, and a read is one orjson.loads (readers always get a private copy anyway).
Encoded = dict[str, dict[str, bytes]]


class SnapshotError(ValueError):
    """The snapshot's bytes are not a snapshot (the caller names the file)."""


class JournalMark(NamedTuple):
    """The journal as it stood when a snapshot was taken: the snapshot holds every write of its
    first `size` bytes.  The file is named by its inode (the store replaces the journal with a new
    file whenever it drops lines from it, so one inode never holds two journals while that
    snapshot is current) and its content by the CRC-32 of those bytes."""

    inode: int
    size: int
    crc32: int


class LoadedSnapshot(NamedTuple):
    data: Encoded
    legacy: bool  # written by an earlier version: rewrite it
    journal: JournalMark | None = None  # None: written without one (replay the whole journal)


def compact_bytes(doc: object) -> bytes:
    """`doc` as JSON bytes sized to fit: orjson's own result keeps a 4-16 KiB buffer behind it,
    which, kept for every stored document, would cost ten times the data.  A slice of it is a
    new object of exactly its size, one copy in C (``bytes(memoryview(...))`` made two calls)."""
    return orjson.dumps(doc, option=orjson.OPT_APPEND_NEWLINE)[:-1]  # a slice is a new object


def encode_snapshot(
    data: Encoded,
    journal: JournalMark | None = None,
    pause: Callable[[], None] | None = None,
) -> list[bytes]:
    """The snapshot of `data` as pieces to write one after the other (or ``b"".join``): the
    header line, then the rest about a thousand documents a piece, assembled from the documents'
    bytes without decoding them.  Never one 10-100 MB bytes object: no copy of all of it is made
    to glue pieces together, and none of the steps holds the GIL for long.  `journal` records
    which journal bytes `data` already holds.

    `pause` is called after each piece: a thread encoding beside an event loop sleeps there, so
    that the loop waits for the GIL a fraction of a millisecond rather than the interpreter's
    5 ms switch interval each time it has given it up for I/O."""
    pieces: list[bytes] = []
    parts: list[bytes] = []
    crc = 0

    def cut() -> None:
        nonlocal crc
        piece = b"".join(parts)
        parts.clear()
        crc = zlib.crc32(piece, crc)
        pieces.append(piece)

    documents = 0
    opening = b","  # the header line already ends with its newline
    for name, docs in data.items():
        parts += (opening, orjson.dumps(name), b":{")
        opening = b"\n,"
        if docs:
            # "\n" id ":\n" doc for the first document, "\n," id ":\n" doc for the others,
            # zipped in C: a Python loop over the documents would cost as much again.
            ids, raws = list(docs), list(docs.values())
            parts += (b"\n", compact_bytes(ids[0]), b":\n", raws[0])
            for at in range(1, len(ids), _CHUNK):
                parts += chain.from_iterable(
                    zip(
                        repeat(b"\n,"),
                        map(compact_bytes, ids[at : at + _CHUNK]),
                        repeat(b":\n"),
                        raws[at : at + _CHUNK],
                    )
                )
                cut()
                if pause is not None:
                    pause()
        parts.append(b"\n}")
        documents += len(docs)
    parts.append(b"}\n" if opening == b"," else b"\n}\n")
    cut()
    info: dict[str, object] = {"format": FORMAT, "documents": documents, "crc32": crc}
    if journal is not None:
        info["journal"] = journal._asdict()
    return [_HEAD + orjson.dumps({"info": info}) + b"\n", *pieces]


def decode_snapshot(raw: bytes) -> LoadedSnapshot:
    """The tables held in a snapshot's bytes, in either format.  Raises ``SnapshotError``."""
    head_end = raw.find(b"\n") + 1
    info = _header(raw[: head_end - 1]) if head_end and raw.startswith(_HEAD) else None
    if info is None:
        # One line of JSON, as earlier versions write it (perhaps from a snapshot in this format).
        return LoadedSnapshot(_decode_legacy(raw), legacy=True)
    version, crc, documents, journal = info
    if version != FORMAT:
        raise SnapshotError(f"format {version!r} is not one this version reads ({FORMAT})")
    if zlib.crc32(memoryview(raw)[head_end:]) != crc:
        raise SnapshotError(
            "its checksum does not match: the file was changed after it was written"
        )
    data = _decode_lines(raw.split(b"\n"))
    if sum(len(docs) for docs in data.values()) != documents:
        raise SnapshotError(f"it holds a different number of documents than its {documents}")
    return LoadedSnapshot(data, legacy=False, journal=journal)


def reheader(raw: bytes, journal: JournalMark | None) -> list[bytes]:
    """The pieces of a snapshot in this format (`raw`, as `encode_snapshot` wrote it and
    `decode_snapshot` checked it) with `journal` as its header's mark: the documents are written
    as they are, not encoded again.  Raises ``SnapshotError`` if `raw` has no such header."""
    end = raw.find(b"\n", 0, 4096) + 1
    info = _header(raw[: end - 1]) if end and raw.startswith(_HEAD) else None
    if info is None or info[0] != FORMAT:
        raise SnapshotError("it is not a snapshot in this version's format")
    header: dict[str, object] = {"format": FORMAT, "documents": info[2], "crc32": info[1]}
    if journal is not None:
        header["journal"] = journal._asdict()
    return [_HEAD + orjson.dumps({"info": header}) + b"\n", raw[end:]]


def _header(line: bytes) -> tuple[object, object, object, JournalMark | None] | None:
    """(format, crc32, documents, journal mark) of a header line, or None if `line` is not one."""
    try:
        info = orjson.loads(line + b"}")[INFO_TABLE]["info"]
        return info["format"], info["crc32"], info["documents"], _journal_mark(info.get("journal"))
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
        return None


def _journal_mark(raw: object) -> JournalMark | None:
    """The header's journal mark; None if absent or malformed (the store then replays the whole
    journal, which is what it did before snapshots recorded one)."""
    if not isinstance(raw, dict):
        return None
    values: list[Any] = [raw.get(field) for field in JournalMark._fields]
    if not all(type(value) is int and value >= 0 for value in values):
        return None
    return JournalMark(*values)


def _decode_lines(lines: list[bytes]) -> Encoded:
    # lines[0] is the header; the file ends with "}\n", so the last two lines are "}" and "".
    last = len(lines) - 2
    if last < 1 or lines[last] != b"}" or lines[last + 1] != b"":
        raise SnapshotError("it does not end with the object's closing line")
    data: Encoded = {}
    at = 1
    with no_gc():
        while at < last:
            opening = lines[at]
            if not (opening.startswith(b',"') and opening.endswith(b":{")):
                raise SnapshotError(f"line {at + 1} does not open a table")
            name = _loads_str(opening[1:-2], at)
            try:
                end = lines.index(b"}", at + 1, last)
            except ValueError:
                raise SnapshotError(f"table {name!r} has no closing line") from None
            id_lines, docs = lines[at + 1 : end : 2], lines[at + 2 : end : 2]
            if len(id_lines) != len(docs):
                raise SnapshotError(f"table {name!r} has a doc id without its document")
            ids = _loads_ids(id_lines, name)
            table = dict(zip(ids, docs, strict=True))
            if len(table) != len(ids) or name in data or name == INFO_TABLE:
                raise SnapshotError(f"table {name!r} or one of its doc ids appears twice")
            data[name] = table
            at = end + 1
    return data


def _loads_ids(id_lines: list[bytes], table: str) -> list[str]:
    """The doc ids of `id_lines` (``"id":`` or ``,"id":``), decoded as one JSON array."""
    joined = b",".join([line.strip(b",:") for line in id_lines])
    try:
        ids = orjson.loads(b"[" + joined + b"]")
    except orjson.JSONDecodeError:
        ids = None
    if not (isinstance(ids, list) and len(ids) == len(id_lines) and set(map(type, ids)) <= {str}):
        raise SnapshotError(f"table {table!r} has a doc-id line that is not one JSON string")
    return ids


def _loads_str(raw: bytes, lineno: int) -> str:
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        value = None
    if not isinstance(value, str):
        raise SnapshotError(f"near line {lineno + 1}: {raw[:80]!r} is not a JSON string")
    return value


def _decode_legacy(raw: bytes) -> Encoded:
    """`{table: {doc_id: doc}}` on one line (payorch before format 2): decode, re-encode."""
    with no_gc():
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise SnapshotError(f"it is not valid JSON: {exc}") from None
        if not isinstance(data, dict) or not all(
            isinstance(docs, dict) and all(isinstance(d, dict) for d in docs.values())
            for docs in data.values()
        ):
            raise SnapshotError("it is not a {table: {doc_id: doc}} object")
        # A format-2 snapshot that an older version read and wrote back keeps its header as a
        # table: it is not one.
        data.pop(INFO_TABLE, None)
        return {
            name: {doc_id: compact_bytes(doc) for doc_id, doc in docs.items()}
            for name, docs in data.items()
        }
