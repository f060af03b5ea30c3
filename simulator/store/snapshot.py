"""The snapshot file: every document's stored bytes, laid out so loading needs no JSON decoding.

The store keeps each document as its exact JSON bytes.  The snapshot is still one JSON object
``{table: {doc_id: doc}}`` (any JSON tool, and older payorch versions, read it), but written one
token per line, so a reader can split it into lines and take each document's line as its bytes::

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

The first line opens the object with an ``info`` entry: the format, the number of documents and
the CRC-32 of everything after that line.  Then each table: ``,"name":{``, alternating doc-id
lines (``"id":``, later ``,"id":``) and document lines, and ``}``; a last ``}`` closes the
object.  No line can be mistaken for another: compact JSON (what orjson writes) never holds a
raw newline, document lines start with ``{``, id lines with ``"`` or ``,"``, and only a table's
end is the line ``}``.

Loading is one ``split`` (the document lines *are* the documents' bytes, exact-size), one small
decode per doc id, and a CRC over the file, which stands in for the validation a full decode
used to give: the file is written whole and renamed into place, so a mismatch means the disk or
a person changed it.  The table name ``#snapshot`` is reserved for the ``info`` entry.

A snapshot written by earlier versions (``{table: {doc_id: doc}}`` on one line) is still read,
by decoding it whole; the store rewrites it in this format on open (``LoadedSnapshot.legacy``).
"""

from __future__ import annotations

import gc
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final, NamedTuple

import orjson

__all__ = [
    "FORMAT",
    "INFO_TABLE",
    "Encoded",
    "LoadedSnapshot",
    "SnapshotError",
    "compact_bytes",
    "decode_snapshot",
    "encode_snapshot",
    "no_gc",
]

FORMAT: Final = 2
INFO_TABLE: Final = "#snapshot"
_HEAD: Final = b'{"#snapshot":'

# In memory each document is kept as its encoded JSON bytes: about a fifth of the size of the
# decoded dict, and a read is one orjson.loads (readers always get a private copy anyway).
Encoded = dict[str, dict[str, bytes]]


class SnapshotError(ValueError):
    """The snapshot's bytes are not a snapshot (the caller names the file)."""


class LoadedSnapshot(NamedTuple):
    data: Encoded
    legacy: bool  # written by an earlier version: rewrite it


@contextmanager
def no_gc() -> Iterator[None]:
    """Pause the cyclic GC while building many objects that all stay alive.

    Decoding tens of thousands of documents allocates millions of container objects; with the
    collector running, each of its passes re-walks everything allocated so far, which doubles the
    cost of a bulk decode.  JSON values cannot form cycles, so nothing is lost by waiting.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def compact_bytes(doc: object) -> bytes:
    """`doc` as JSON bytes sized to fit: orjson's own result keeps a 16 KiB buffer behind it,
    which, kept for every stored document, would cost ten times the data."""
    return bytes(memoryview(orjson.dumps(doc)))


def encode_snapshot(data: Encoded) -> tuple[bytes, bytes]:
    """The snapshot of `data` as (header line, rest), assembled from the documents' bytes
    without decoding them.  Two pieces, so the 10-100 MB rest is never copied again to glue the
    header on: write one after the other (or ``b"".join`` them)."""
    parts: list[bytes] = []
    documents = 0
    for name, docs in data.items():
        parts += (b"\n,", orjson.dumps(name), b":{")
        separator = b"\n"
        for doc_id, raw in docs.items():
            parts += (separator, orjson.dumps(doc_id), b":\n", raw)
            separator = b"\n,"
        parts.append(b"\n}")
        documents += len(docs)
    parts.append(b"\n}\n")
    parts[0] = parts[0][1:]  # the header line already ends with its newline
    body = b"".join(parts)
    info = {"info": {"format": FORMAT, "documents": documents, "crc32": zlib.crc32(body)}}
    return _HEAD + orjson.dumps(info) + b"\n", body


def decode_snapshot(raw: bytes) -> LoadedSnapshot:
    """The tables held in a snapshot's bytes, in either format.  Raises ``SnapshotError``."""
    if not raw.startswith(_HEAD):
        return LoadedSnapshot(_decode_legacy(raw), legacy=True)
    head_end = raw.find(b"\n") + 1
    try:
        info = orjson.loads(raw[: head_end - 1] + b"}")[INFO_TABLE]["info"]
        expected = (info["format"], info["crc32"], info["documents"])
    except (orjson.JSONDecodeError, KeyError, TypeError):
        raise SnapshotError("its first line is not a snapshot header") from None
    if expected[0] != FORMAT:
        raise SnapshotError(f"format {expected[0]!r} is not one this version reads ({FORMAT})")
    if zlib.crc32(memoryview(raw)[head_end:]) != expected[1]:
        raise SnapshotError(
            "its checksum does not match: the file was changed after it was written"
        )
    data = _decode_lines(raw.split(b"\n"))
    if sum(len(docs) for docs in data.values()) != expected[2]:
        raise SnapshotError(f"it holds a different number of documents than its {expected[2]}")
    return LoadedSnapshot(data, legacy=False)


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
            ids = [_loads_str(line.strip(b",:"), at) for line in id_lines]
            table = dict(zip(ids, docs, strict=True))
            if len(table) != len(ids) or name in data or name == INFO_TABLE:
                raise SnapshotError(f"table {name!r} or one of its doc ids appears twice")
            data[name] = table
            at = end + 1
    return data


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
        return {
            name: {doc_id: compact_bytes(doc) for doc_id, doc in docs.items()}
            for name, docs in data.items()
        }
