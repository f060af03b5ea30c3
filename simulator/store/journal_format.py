"""One journal line: a JSON list of ops ``[table, doc_id, doc_or_null]`` (null = delete), written
whole or not at all (`journal.py` says why); how an op is encoded and a line read back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from simulator.store.errors import StoreCorruptError
from simulator.store.snapshot import INFO_TABLE, Encoded, compact_bytes

Doc = dict[str, Any]
#: One write: (table, doc_id, doc); ``doc=None`` deletes the document.
Op = tuple[str, str, Doc | None]
Tables = dict[str, dict[str, Doc]]


def encode_tables(data: Tables) -> Encoded:
    return {
        name: {doc_id: compact_bytes(doc) for doc_id, doc in docs.items()}
        for name, docs in data.items()
    }


def op_head(table: object) -> bytes | None:
    """The start of every op on `table` in a journal line, ``["table",``; None for a name no
    document may be written under (not a str, or the snapshot's reserved one)."""
    if not isinstance(table, str) or table == INFO_TABLE:
        return None
    return b"[" + orjson.dumps(table) + b","


def encode_op(op: Op) -> tuple[bytes, bytes | None]:
    """Serialise one op: its journal fragment and the doc's own bytes (kept in memory)."""
    table, doc_id, doc = op
    if not isinstance(table, str) or not isinstance(doc_id, str):
        raise TypeError(f"table and doc_id must be str, got {table!r}, {doc_id!r}")
    if table == INFO_TABLE:
        raise ValueError(f"the table name {INFO_TABLE!r} is reserved")
    if doc is not None and not isinstance(doc, dict):
        raise TypeError(f"a document must be a dict, got {type(doc).__name__}")
    raw = None if doc is None else compact_bytes(doc)  # TypeError on non-JSON values
    head = orjson.dumps([table, doc_id])[:-1]
    return b"".join((head, b",", b"null" if raw is None else raw, b"]")), raw


def decode_line(path: Path, lineno: int, line: bytes) -> list[Op]:
    """Parse and validate a whole line before any of it is applied."""

    def corrupt(why: str) -> StoreCorruptError:
        return StoreCorruptError(
            f"{path}: line {lineno} is corrupt ({why}); only a torn last line is "
            "recovered automatically; restore the data dir from a backup or remove "
            "the line by hand"
        )

    try:
        ops = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise corrupt(str(exc)) from None
    if not isinstance(ops, list) or not ops:
        raise corrupt("not a list of ops")
    decoded: list[Op] = []
    for op in ops:
        if not (
            isinstance(op, list)
            and len(op) == 3
            and isinstance(op[0], str)
            and isinstance(op[1], str)
            and (op[2] is None or isinstance(op[2], dict))
        ):
            raise corrupt(f"bad op {op!r:.80}")
        decoded.append((op[0], op[1], op[2]))
    return decoded
