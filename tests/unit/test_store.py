"""Tests for simulator.store: API, batches, recovery, locking and SIGKILL safety."""

from __future__ import annotations

import errno
import gc
import os
import random
import signal
import subprocess
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from tinydb import Query

from simulator.store import Store, StoreCorruptError, StoreError, StoreLockedError

REPO = Path(__file__).resolve().parents[2]
CHILD_ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def run_child(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        env=CHILD_ENV,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def journal_lines(data_dir: Path) -> list[bytes]:
    return (data_dir / "journal.log").read_bytes().splitlines()


# -- basic API ------------------------------------------------------------------------


def test_put_get_delete_values(tmp_path: Path) -> None:
    with Store.open(tmp_path) as store:
        docs = store.table("docs")
        assert store.table("docs") is docs
        docs.put("a", {"n": 1, "nested": {"xs": [1, 2]}})
        docs.put("b", {"n": 2})
        docs.put("c", {"n": 3})
        docs.put("a", {"n": 10})  # replace keeps insertion position
        assert docs.get("a") == {"n": 10}
        assert docs.get("zz") is None
        assert len(docs) == 3
        assert "b" in docs and "zz" not in docs
        docs.delete("b")
        docs.delete("b")  # deleting a missing doc is a no-op
        assert docs.values() == [{"n": 10}, {"n": 3}]
        assert len(journal_lines(tmp_path)) == 5  # 4 puts + 1 delete
        assert docs.ids() == ["a", "c"]
        assert len(store.table("other")) == 0


def test_returned_docs_are_copies(tmp_path: Path) -> None:
    with Store.open(tmp_path) as store:
        docs = store.table("docs")
        original = {"n": 1, "tags": ["x"]}
        docs.put("a", original)
        original["tags"].append("mutated-after-put")
        got = docs.get("a")
        assert got is not None
        got["tags"].append("mutated-after-get")
        docs.values()[0]["n"] = 99
        assert docs.get("a") == {"n": 1, "tags": ["x"]}


def test_rejects_non_json_values_without_changing_anything(tmp_path: Path) -> None:
    with Store.open(tmp_path) as store:
        docs = store.table("docs")
        with pytest.raises(TypeError):
            docs.put("a", {"when": object()})
        with pytest.raises(TypeError):
            docs.put(1, {"n": 1})  # type: ignore[arg-type]
        assert len(docs) == 0
        assert journal_lines(tmp_path) == []


def test_memory_store_has_no_files(tmp_path: Path) -> None:
    for store in (Store.memory(), Store.open(None)):
        with store:
            docs = store.table("docs")
            docs.put("a", {"n": 1})
            with store.batch():
                docs.put("b", {"n": 2})
            assert [d["n"] for d in docs.values()] == [1, 2]


def test_closed_store_refuses_writes(tmp_path: Path) -> None:
    store = Store.open(tmp_path)
    docs = store.table("docs")
    store.close()
    store.close()  # idempotent
    with pytest.raises(StoreError, match="closed"):
        docs.put("a", {"n": 1})


# -- batches --------------------------------------------------------------------------


def test_batch_is_one_journal_line_and_visible_inside(tmp_path: Path) -> None:
    with Store.open(tmp_path) as store:
        a, b = store.table("a"), store.table("b")
        a.put("keep", {"n": 0})
        with store.batch():
            a.put("x", {"n": 1})
            b.put("y", {"n": 2})
            a.delete("keep")
            assert a.get("x") == {"n": 1} and "keep" not in a  # reads see the batch
            assert len(journal_lines(tmp_path)) == 1  # nothing written yet
        lines = journal_lines(tmp_path)
        assert len(lines) == 2
        assert orjson.loads(lines[1]) == [
            ["a", "x", {"n": 1}],
            ["b", "y", {"n": 2}],
            ["a", "keep", None],
        ]


def test_batch_rolls_back_on_exception(tmp_path: Path) -> None:
    with Store.open(tmp_path) as store:
        docs = store.table("docs")
        docs.put("a", {"status": "new"})
        docs.put("b", {"status": "new"})
        captured = Query().status == "captured"
        assert docs.search(captured) == []  # primes tinydb's query cache
        before = journal_lines(tmp_path)
        with pytest.raises(RuntimeError, match="boom"), store.batch():
            doc = docs.get("a")
            assert doc is not None
            doc["status"] = "captured"
            docs.put("a", doc)
            docs.delete("b")
            docs.put("c", {"status": "captured"})
            assert len(docs.search(captured)) == 2
            raise RuntimeError("boom")
        assert docs.get("a") == {"status": "new"}
        assert docs.get("b") == {"status": "new"}
        assert "c" not in docs
        assert docs.search(captured) == []  # cache invalidated by the rollback
        assert journal_lines(tmp_path) == before
        assert not store.in_batch


def test_nested_batch_joins_outer_and_inner_failure_undoes_only_inner(tmp_path: Path) -> None:
    with Store.open(tmp_path) as store:
        docs = store.table("docs")
        with store.batch():
            docs.put("outer", {"n": 1})
            with store.batch():
                docs.put("inner-ok", {"n": 2})
            with pytest.raises(ValueError), store.batch():
                docs.put("inner-bad", {"n": 3})
                raise ValueError
            assert journal_lines(tmp_path) == []
        assert docs.ids() == ["outer", "inner-ok"]
        assert len(journal_lines(tmp_path)) == 1


def test_failed_disk_write_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Store.open(tmp_path) as store:
        docs = store.table("docs")
        docs.put("a", {"n": 1})
        good = (tmp_path / "journal.log").read_bytes()
        real_write = os.write

        def disk_full(fd: int, data: bytes) -> int:
            real_write(fd, data[: len(data) // 2])  # part of the line reaches the file
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(os, "write", disk_full)
        with pytest.raises(OSError, match="No space"):
            docs.put("a", {"n": 2})
        with pytest.raises(OSError, match="No space"), store.batch():
            docs.put("b", {"n": 3})
            docs.delete("a")
        monkeypatch.setattr(os, "write", real_write)
        assert docs.values() == [{"n": 1}]
        assert (tmp_path / "journal.log").read_bytes() == good  # partial line cut off
        docs.put("c", {"n": 4})
    with Store.open(tmp_path) as store:
        assert store.table("docs").ids() == ["a", "c"]


# -- persistence and recovery ---------------------------------------------------------


def test_reopen_sees_data(tmp_path: Path) -> None:
    with Store.open(tmp_path) as store:
        store.table("docs").put("a", {"amount": "10.50", "ok": True, "x": None, "f": 1.5})
        store.table("docs").put("b", {"n": 2})
        store.table("docs").delete("b")
        store.table("other").put("c", {"n": 3})
    with Store.open(tmp_path) as store:
        assert store.table("docs").values() == [
            {"amount": "10.50", "ok": True, "x": None, "f": 1.5}
        ]
        assert store.table("other").get("c") == {"n": 3}
        assert sorted(store.table_names()) == ["docs", "other"]


def test_tinydb_query_search_and_bulk_update(tmp_path: Path) -> None:
    with Store.open(tmp_path) as store:
        payments = store.table("payments")
        for i in range(6):
            payments.put(f"p{i}", {"status": "captured" if i % 2 else "new", "n": i})
        q = Query()
        assert [d["n"] for d in payments.search(q.status == "captured")] == [1, 3, 5]
        assert payments.search(q.status == "captured")[0].doc_id == "p1"
        payments.put("p6", {"status": "captured", "n": 6})  # must invalidate the cache
        assert payments.count(q.status == "captured") == 4
        assert payments.contains(q.n == 6) and not payments.contains(q.n == 99)
        assert len(payments.all()) == 7
        # tinydb's own bulk write paths go through the journal too
        assert sorted(payments.update({"status": "settled"}, q.n >= 5)) == ["p5", "p6"]
        assert payments.remove(q.n == 0) == ["p0"]
        with pytest.raises(TypeError, match="put"):
            payments.insert({"n": 7})
    with Store.open(tmp_path) as store:
        payments = store.table("payments")
        assert payments.get("p6") == {"status": "settled", "n": 6}
        assert "p0" not in payments
        assert len(payments) == 6


CRASH_WITHOUT_CLOSE = """
import os, sys
from pathlib import Path
from simulator.store import Store
store = Store.open(Path(sys.argv[1]))
for i in range(3):
    store.table("docs").put(f"d{i}", {"n": i})
os._exit(0)  # no close(): the journal is left as a crash would leave it
"""


def test_torn_trailing_line_is_dropped(tmp_path: Path) -> None:
    assert run_child(CRASH_WITHOUT_CLOSE, str(tmp_path)).returncode == 0
    assert len(journal_lines(tmp_path)) == 3
    with (tmp_path / "journal.log").open("ab") as f:
        f.write(b'[["docs","d3",{"n":')  # a write() cut short by the crash
    with Store.open(tmp_path) as store:
        assert store.table("docs").ids() == ["d0", "d1", "d2"]
        store.table("docs").put("d4", {"n": 4})
    with Store.open(tmp_path) as store:
        assert store.table("docs").ids() == ["d0", "d1", "d2", "d4"]


def test_corrupt_middle_line_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "journal.log").write_bytes(
        b'[["docs","a",{"n":1}]]\n{garbage\n[["docs","b",{"n":2}]]\n'
    )
    with pytest.raises(StoreCorruptError, match=r"journal\.log: line 2 is corrupt"):
        Store.open(tmp_path)
    # the failed open released the lock
    (tmp_path / "journal.log").write_bytes(b'[["docs","a",{"n":1}]]\n')
    with Store.open(tmp_path) as store:
        assert store.table("docs").get("a") == {"n": 1}


def test_crash_between_snapshot_and_journal_truncate_is_idempotent(tmp_path: Path) -> None:
    # Snapshot already has the final state; the stale journal replays over it.
    (tmp_path / "snapshot.json").write_bytes(orjson.dumps({"docs": {"a": {"n": 2}, "c": {"n": 3}}}))
    (tmp_path / "journal.log").write_bytes(
        b'[["docs","a",{"n":1}]]\n[["docs","b",{"n":9}]]\n'
        b'[["docs","a",{"n":2}],["docs","b",null]]\n[["docs","c",{"n":3}]]\n'
    )
    (tmp_path / "snapshot.json.tmp").write_bytes(b"{half a snapsh")  # crashed compaction
    with Store.open(tmp_path) as store:
        assert store.table("docs").values() == [{"n": 2}, {"n": 3}]
    assert not (tmp_path / "snapshot.json.tmp").exists()


def test_compaction(tmp_path: Path) -> None:
    with Store.open(tmp_path, compact_every=10) as store:
        docs = store.table("docs")
        for i in range(25):
            docs.put(f"d{i}", {"n": i})
        docs.delete("d0")
        assert len(journal_lines(tmp_path)) == 6  # compacted at 10 and 20 lines
        snapshot = orjson.loads((tmp_path / "snapshot.json").read_bytes())
        assert len(snapshot["docs"]) == 20
    assert journal_lines(tmp_path) == []  # close() compacts
    with Store.open(tmp_path, compact_every=10) as store:
        assert store.table("docs").ids() == [f"d{i}" for i in range(1, 25)]


# -- snapshot format --------------------------------------------------------------------

# Ids and values that could be mistaken for the snapshot's own lines if it were careless.
AWKWARD = {
    "plain": {"n": 1},
    '"}\n,"x":\n{': {"text": 'a\nb\r\n}\n,"y":{', "nested": [{"}": "{"}], "u": "é ✓ \u2028"},
    "": {"empty id": True},
    "with\ttab": {},
    ",": {"f": 1.5, "big": 2**62, "neg": -0.0, "none": None},
    "#snapshot": {"only the table name is reserved": True},
}


def test_snapshot_round_trip_keeps_every_doc_id_and_order(tmp_path: Path) -> None:
    with Store.open(tmp_path) as store:
        for doc_id, doc in AWKWARD.items():
            store.table("docs").put(doc_id, doc)
        store.table('"},\n{').put("x", {"n": 2})
        store.table("emptied").put("gone", {"n": 3})
        store.table("emptied").delete("gone")
    raw = (tmp_path / "snapshot.json").read_bytes()
    assert raw.startswith(b'{"#snapshot":{"info":{"format":2,"documents":7,"crc32":')
    # Still one JSON object {table: {doc_id: doc}} for any JSON reader (and earlier versions).
    as_json = orjson.loads(raw)
    assert as_json["docs"] == AWKWARD and as_json["emptied"] == {}
    with Store.open(tmp_path) as store:
        docs = store.table("docs")
        assert docs.ids() == list(AWKWARD)
        assert docs.values() == list(AWKWARD.values())
        assert store.table('"},\n{').get("x") == {"n": 2}
        assert sorted(store.table_names()) == ['"},\n{', "docs", "emptied"]
        docs.put("more", {"n": 4})
    with Store.open(tmp_path) as store:  # a snapshot read back writes the same snapshot
        assert store.table("docs").ids() == [*AWKWARD, "more"]


def test_snapshot_of_an_empty_store_round_trips(tmp_path: Path) -> None:
    store = Store.open(tmp_path)
    store.compact()
    store.close()
    assert orjson.loads((tmp_path / "snapshot.json").read_bytes())["#snapshot"]["info"]
    with Store.open(tmp_path) as store:
        assert store.table_names() == []


def test_full_rewrite_writes_a_snapshot_in_the_current_format(tmp_path: Path) -> None:
    with Store.open(tmp_path) as store:
        store.table("old").put("x", {"n": 0})
        store._storage.write({"docs": {"a": {"n": 1}}})  # tinydb's whole-database write path
        raw = (tmp_path / "snapshot.json").read_bytes()
        assert raw.startswith(b'{"#snapshot":') and orjson.loads(raw)["docs"] == {"a": {"n": 1}}
        assert store.table("docs").get("a") == {"n": 1} and len(store.table("old")) == 0
    with Store.open(tmp_path) as store:
        assert store.table_names() == ["docs"]


def test_reserved_table_name_is_refused(tmp_path: Path) -> None:
    with Store.open(tmp_path) as store:
        with pytest.raises(ValueError, match="reserved"):
            store.table("#snapshot").put("a", {"n": 1})
        assert journal_lines(tmp_path) == []


def test_old_format_snapshot_is_read_and_rewritten_on_open(tmp_path: Path) -> None:
    # As payorch wrote it before format 2: {table: {doc_id: doc}} on one line.
    old = {"docs": {"a": {"n": 1}, "b": {"n": 2}}, "other": {"c": {"text": "x\ny"}}}
    (tmp_path / "snapshot.json").write_bytes(orjson.dumps(old))
    (tmp_path / "journal.log").write_bytes(b"")
    with Store.open(tmp_path) as store:
        assert store.table("docs").values() == [{"n": 1}, {"n": 2}]
        assert store.table("other").get("c") == {"text": "x\ny"}
        # Migrated on open, before anything else is written.
        raw = (tmp_path / "snapshot.json").read_bytes()
        assert raw.startswith(b'{"#snapshot":') and raw.count(b"\n") > 5
        assert {k: v for k, v in orjson.loads(raw).items() if k != "#snapshot"} == old
    with Store.open(tmp_path) as store:
        assert store.table("docs").ids() == ["a", "b"]


def test_snapshot_written_back_by_an_older_version_reads(tmp_path: Path) -> None:
    with Store.open(tmp_path) as store:
        store.table("docs").put("a", {"n": 1})
    # An older payorch reads it as JSON, and compacts it back on one line, header and all.
    path = tmp_path / "snapshot.json"
    path.write_bytes(orjson.dumps(orjson.loads(path.read_bytes())))
    with Store.open(tmp_path) as store:
        assert store.table_names() == ["docs"]
    assert orjson.loads(path.read_bytes())["docs"] == {"a": {"n": 1}}
    with Store.open(tmp_path) as store:
        assert store.table("docs").get("a") == {"n": 1}


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda raw: raw[: len(raw) // 2], "checksum"),  # cut short
        (lambda raw: raw.replace(b'"n":1', b'"n":7'), "checksum"),  # changed in place
        (lambda raw: raw.replace(b'format":2', b'format":9'), "format 9"),
        (lambda raw: raw[:20] + raw[40:], "not valid JSON"),  # header damaged
    ],
)
def test_damaged_snapshot_is_a_clear_error(
    tmp_path: Path, damage: Callable[[bytes], bytes], message: str
) -> None:
    with Store.open(tmp_path) as store:
        for i in range(5):
            store.table("docs").put(f"d{i}", {"n": i})
    path = tmp_path / "snapshot.json"
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(StoreCorruptError, match=f"snapshot.json is corrupt: .*{message}"):
        Store.open(tmp_path)
    assert gc.isenabled()  # paused while loading, whatever happened
    # the failed open released the lock
    assert run_child(OPEN_AND_REPORT, str(tmp_path)).returncode == 1


def with_header(body: bytes) -> bytes:
    """A format-2 snapshot around `body`, with a checksum that matches whatever it holds."""
    info = {"format": 2, "documents": body.count(b"\n{"), "crc32": zlib.crc32(body)}
    return b'{"#snapshot":' + orjson.dumps({"info": info}) + b"\n" + body


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b',"t":{\n"a":\n{"n":1}\n}\n}\n', None),  # well formed
        (b',"t":{\n"a":\n{"n":1}\n"b":\n}\n}\n', "doc id without its document"),
        (b',"t":{\n{"n":1}\n"a":\n}\n}\n', "not one JSON string"),
        (b',"t":{\n"a":\n{"n":1}\n,"a":\n{"n":2}\n}\n}\n', "appears twice"),
        (b',"t":{\n}\n,"t":{\n}\n}\n', "appears twice"),
        (b',"t":{\n"a":\n{"n":1}\n}\n', "closing line"),
        (b',"t":{\n"a":\n{"n":1}\n,"u":{\n}\n', "closing line"),
        (b'"t":{\n}\n}\n', "does not open a table"),
    ],
)
def test_snapshot_structure_is_checked_even_with_a_matching_checksum(
    tmp_path: Path, body: bytes, message: str | None
) -> None:
    (tmp_path / "snapshot.json").write_bytes(with_header(body))
    if message is None:
        with Store.open(tmp_path) as store:
            assert store.table("t").get("a") == {"n": 1}
    else:
        with pytest.raises(StoreCorruptError, match=message):
            Store.open(tmp_path)


# Killed (SIGKILL, no clean-up) at a chosen point of a compaction.
KILLED_IN_COMPACTION = """
import os, signal, sys
from pathlib import Path
from simulator.store import Store
data_dir, stage = Path(sys.argv[1]), sys.argv[2]
store = Store.open(data_dir)
docs = store.table("docs")
for i in range(300):
    docs.put(f"d{i}", {"n": i, "text": "a line\\n}\\n,{" * (i % 7)})
docs.delete("d0")
journal_fd = store._storage._fd
real_write = os.write

def write_half_then_die(fd, data):
    if fd != journal_fd:  # the snapshot's temporary file
        real_write(fd, bytes(data[: len(data) // 2]))
        os.kill(os.getpid(), signal.SIGKILL)
    return real_write(fd, data)

def die(*args):
    os.kill(os.getpid(), signal.SIGKILL)

if stage == "writing":
    os.write = write_half_then_die
else:  # renamed into place, journal not yet emptied
    os.ftruncate = die
print("compacting", flush=True)
store.compact()
"""


@pytest.mark.parametrize("stage", ["writing", "renamed"])
def test_killed_mid_snapshot_loses_nothing(tmp_path: Path, stage: str) -> None:
    with Store.open(tmp_path) as store:  # an earlier snapshot, which the crash must not harm
        store.table("docs").put("d0", {"n": 0})
        store.table("docs").put("early", {"n": -1})
    result = run_child(KILLED_IN_COMPACTION, str(tmp_path), stage)
    assert result.returncode == -signal.SIGKILL, result.stderr
    assert result.stdout == "compacting\n"
    assert (tmp_path / "snapshot.json.tmp").exists() == (stage == "writing")
    expected = {"early": {"n": -1}} | {
        f"d{i}": {"n": i, "text": "a line\n}\n,{" * (i % 7)} for i in range(1, 300)
    }
    with Store.open(tmp_path) as store:
        docs = store.table("docs")
        assert dict(zip(docs.ids(), docs.values(), strict=True)) == expected
    assert not (tmp_path / "snapshot.json.tmp").exists()
    with Store.open(tmp_path) as store:  # and the snapshot written on that open reads back
        assert len(store.table("docs")) == 300


def test_scan_decodes_copies_of_the_table_as_it_was(tmp_path: Path) -> None:
    with Store.open(tmp_path) as store:
        docs = store.table("docs")
        for i in range(3):
            docs.put(f"d{i}", {"n": i, "xs": [i]})
        scan = docs.scan()
        first = next(scan)
        first["xs"].append("mutated")
        docs.put("d3", {"n": 3, "xs": [3]})
        docs.delete("d2")
        assert [first, *scan] == [
            {"n": 0, "xs": [0, "mutated"]},
            {"n": 1, "xs": [1]},
            {"n": 2, "xs": [2]},
        ]
        assert docs.get("d0") == {"n": 0, "xs": [0]}


# -- locking --------------------------------------------------------------------------

OPEN_AND_REPORT = """
import sys
from pathlib import Path
from simulator.store import Store, StoreLockedError
try:
    Store.open(Path(sys.argv[1])).close()
except StoreLockedError as exc:
    print(exc)
    sys.exit(3)
print("opened")
"""


def test_second_process_is_refused(tmp_path: Path) -> None:
    with Store.open(tmp_path):
        result = run_child(OPEN_AND_REPORT, str(tmp_path))
        assert result.returncode == 3, result.stderr
        assert result.stdout.strip() == (
            f"data dir {tmp_path} is in use by another payorch server "
            f"(pid {os.getpid()}); stop it or pass --data-dir"
        )
        with pytest.raises(StoreLockedError):  # also a second Store in this process
            Store.open(tmp_path)
    assert run_child(OPEN_AND_REPORT, str(tmp_path)).stdout.strip() == "opened"


# -- SIGKILL --------------------------------------------------------------------------

WRITER = """
import sys
from pathlib import Path
from simulator.store import Store
store = Store.open(Path(sys.argv[1]), compact_every=int(sys.argv[2]))
prefix = sys.argv[3]
docs, other = store.table("docs"), store.table("other")
out = sys.stdout
out.write("ready\\n")
out.flush()
i = 0
while True:
    if i % 5 == 4:
        ids = [f"{prefix}-{i}-{k}" for k in range(3)]
        with store.batch():
            for k, doc_id in enumerate(ids):
                docs.put(doc_id, {"n": i, "k": k, "pad": "x" * 300})
            other.put(ids[0], {"n": i})
        out.write("put " + " ".join(ids) + "\\n")
    elif i % 10 == 3:
        out.write(f"deleting {prefix}-{i - 1}\\n")  # intent: either outcome is fine
        out.flush()
        docs.delete(f"{prefix}-{i - 1}")
        out.write(f"del {prefix}-{i - 1}\\n")
    else:
        docs.put(f"{prefix}-{i}", {"n": i, "pad": "x" * 300})
        out.write(f"put {prefix}-{i}\\n")
    out.flush()  # printed only after the write was acknowledged
    i += 1
"""


def test_sigkill_loses_no_acknowledged_write(tmp_path: Path) -> None:
    rng = random.Random(1234)
    acked: set[str] = set()
    deleted: set[str] = set()
    maybe_deleted: set[str] = set()
    deadline = time.monotonic() + 4.0
    trials = 0
    while trials < 15 and time.monotonic() < deadline:
        trials += 1
        child = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path), "40", f"t{trials}"],
            env=CHILD_ENV,
            stdout=subprocess.PIPE,
        )
        assert child.stdout is not None
        assert child.stdout.readline() == b"ready\n"
        time.sleep(rng.uniform(0.0, 0.03))
        child.send_signal(signal.SIGKILL)
        output = child.stdout.read()
        child.wait()
        for line in output.split(b"\n")[:-1]:  # the last piece may be a torn print
            verb, *ids = line.decode().split()
            {"put": acked, "del": deleted, "deleting": maybe_deleted}[verb].update(ids)
        with Store.open(tmp_path) as store:  # readable, and nothing acknowledged is lost
            docs = store.table("docs")
            missing = sorted(acked - deleted - maybe_deleted - set(docs.ids()))
            assert not missing, f"trial {trials}: lost acknowledged writes {missing[:5]}"
            resurrected = sorted(deleted & set(docs.ids()))
            assert not resurrected, f"trial {trials}: lost acknowledged deletes"
            batch_heads = {d for d in acked if d.count("-") == 2 and d.endswith("-0")}
            assert batch_heads <= set(store.table("other").ids())
            batches: dict[str, int] = {}  # even unacknowledged batches land whole or not at all
            for doc_id in docs.ids():
                if doc_id.count("-") == 2:
                    head = doc_id.rsplit("-", 1)[0]
                    batches[head] = batches.get(head, 0) + 1
            assert set(batches.values()) <= {3}, f"trial {trials}: a batch landed partially"
    assert trials >= 5
    assert len(acked) > 50, "the writer barely ran; the test proves nothing"
