"""Tests for simulator.store: API, batches, recovery, locking and SIGKILL safety."""

from __future__ import annotations

import errno
import gc
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from types import MappingProxyType

import orjson
import pytest
from tinydb import Query

import simulator.store.journal as journal_module
from simulator.store import Store, StoreCorruptError, StoreError, StoreLockedError
from simulator.store.files import journal_mark
from simulator.store.journal import JournalStorage

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


def wait_for_compaction(store: Store) -> None:
    """Let the background compaction finish (the next write then trims the journal)."""
    compaction = store._storage._compaction
    assert compaction is not None, "no compaction is running"
    compaction.future.result()


def snapshot_docs(data_dir: Path, table: str = "docs") -> dict[str, object]:
    return orjson.loads((data_dir / "snapshot.json").read_bytes())[table]


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
            docs.put(1, {"n": 1})  # type: ignore[arg-type]  # an int id on purpose: refused
        assert len(docs) == 0
        assert journal_lines(tmp_path) == []


def test_a_batch_refuses_what_a_single_write_refuses_and_keeps_the_rest(tmp_path: Path) -> None:
    """A write inside a batch takes its own path (`JournalStorage.put`): what it refuses leaves
    memory and the batch as they were, and what it takes is written as a single write is."""
    with Store.open(tmp_path) as store:
        docs = store.table("docs")
        with store.batch():
            docs.put("a", {"n": 1})
            with pytest.raises(TypeError):
                docs.put("b", {"when": object()})
            with pytest.raises(TypeError):
                docs.put(1, {"n": 1})  # type: ignore[arg-type]  # an int id on purpose
            with pytest.raises(TypeError):
                docs.put("\ud800", {"n": 1})  # a lone surrogate: no UTF-8 for the journal
            with pytest.raises(TypeError):
                docs.put("c", [1])  # type: ignore[arg-type]  # a document is an object
            with pytest.raises(ValueError, match="reserved"):
                store.table("#snapshot").put("a", {"n": 1})
            docs.put("d", MappingProxyType({"n": 4}))  # any Mapping, as outside a batch
            docs.put('é "q" \\', {"t": "é\n"})
            assert docs.ids() == ["a", "d", 'é "q" \\']
        docs.put("single", {"n": 5})
        lines = journal_lines(tmp_path)
    assert lines == [
        b'[["docs","a",{"n":1}],["docs","d",{"n":4}],'
        + '["docs","é \\"q\\" \\\\",{"t":"é\\n"}]]'.encode(),
        b'[["docs","single",{"n":5}]]',
    ]
    with Store.open(tmp_path) as store:
        assert store.table("docs").get('é "q" \\') == {"t": "é\n"}
        assert store.table("docs").ids() == ["a", "d", 'é "q" \\', "single"]


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
        assert docs.query().search(captured) == []
        before = journal_lines(tmp_path)
        with pytest.raises(RuntimeError, match="boom"), store.batch():
            doc = docs.get("a")
            assert doc is not None
            doc["status"] = "captured"
            docs.put("a", doc)
            docs.delete("b")
            docs.put("c", {"status": "captured"})
            assert len(docs.query().search(captured)) == 2
            raise RuntimeError("boom")
        assert docs.get("a") == {"status": "new"}
        assert docs.get("b") == {"status": "new"}
        assert "c" not in docs
        assert docs.query().search(captured) == []  # the rollback is seen
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


def test_a_failing_rollback_listener_leaves_no_batch_open(tmp_path: Path) -> None:
    """Every outermost batch reuses the storage's one pending batch: a rollback that raises
    must not leave it open, or its writes for the next batch to commit."""
    with Store.open(tmp_path) as store:
        docs = store.table("docs")

        def broken(doc_id: str, doc: object) -> None:
            raise RuntimeError("listener")

        docs.on_rollback(broken)
        with pytest.raises(RuntimeError, match="listener"), store.batch():
            docs.put("a", {"n": 1})
            raise ValueError
        assert not store.in_batch
        with store.batch():
            docs.put("b", {"n": 2})
        assert [orjson.loads(line) for line in journal_lines(tmp_path)] == [
            [["docs", "b", {"n": 2}]]
        ]


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
        assert [d["n"] for d in payments.query().search(q.status == "captured")] == [1, 3, 5]
        assert payments.query().search(q.status == "captured")[0].doc_id == "p1"
        payments.put("p6", {"status": "captured", "n": 6})  # seen by the next query
        tinydb_table = payments.query()
        assert tinydb_table.count(q.status == "captured") == 4
        assert tinydb_table.contains(q.n == 6) and not tinydb_table.contains(q.n == 99)
        assert len(tinydb_table.all()) == 7
        # tinydb's own bulk write paths rewrite the store, durably
        assert sorted(tinydb_table.update({"status": "settled"}, q.n >= 5)) == ["p5", "p6"]
        assert tinydb_table.remove(q.n == 0) == ["p0"]
        assert payments.get("p5") == {"status": "settled", "n": 5}
        with pytest.raises(TypeError, match="put"):
            tinydb_table.insert({"n": 7})
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


def test_replace_is_one_atomic_rewrite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """POST /_sim/reset's store step. Killed after the new snapshot is in place and before the
    journal is emptied, a restart must not replay the old journal over it (its mark says the
    snapshot already holds those lines): the new state, never a mix."""
    store = Store.open(tmp_path)
    for n in range(5):
        store.table("docs").put(f"d{n}", {"n": n})
    seen: list[str] = []
    store.table("docs").on_rollback(lambda doc_id, doc: seen.append(doc_id))

    def killed(*args: object) -> None:
        raise OSError("killed before the journal was emptied")

    monkeypatch.setattr(JournalStorage, "_trim", killed)
    store.replace({"meta": {"m": {"id": "m"}}})
    monkeypatch.undo()
    assert store.table("docs").values() == [] and store.table("meta").get("m") == {"id": "m"}
    # The listeners of the indexes built on the old documents are dropped.
    with pytest.raises(RuntimeError), store.batch():
        store.table("docs").put("x", {"n": 1})
        raise RuntimeError
    assert seen == []
    assert (tmp_path / "journal.log").read_bytes().count(b"\n") == 5  # the old lines are there
    # The process dies here: its files stay as they are, the kernel drops its lock.
    storage = store._storage
    assert storage._fd is not None and storage._lock is not None
    os.close(storage._fd)
    storage._lock.release()
    with Store.open(tmp_path) as again:
        assert again.table("docs").values() == [] and again.table("meta").get("m") == {"id": "m"}


def test_compaction(tmp_path: Path) -> None:
    with Store.open(tmp_path, compact_every=10) as store:
        docs = store.table("docs")
        for i in range(10):
            docs.put(f"d{i}", {"n": i})
        # The 10th write started a snapshot of the state as of that write, in the background.
        wait_for_compaction(store)
        assert len(snapshot_docs(tmp_path)) == 10
        assert len(journal_lines(tmp_path)) == 10  # the journal keeps them until the next write
        docs.put("d10", {"n": 10})  # ... which drops those the snapshot holds
        assert journal_lines(tmp_path) == [b'[["docs","d10",{"n":10}]]']
        for i in range(11, 20):
            docs.put(f"d{i}", {"n": i})
        wait_for_compaction(store)  # started at 10 lines again
        for i in range(20, 25):
            docs.put(f"d{i}", {"n": i})
        docs.delete("d0")
        assert len(journal_lines(tmp_path)) == 6
        assert len(snapshot_docs(tmp_path)) == 20
    assert journal_lines(tmp_path) == []  # close() compacts
    with Store.open(tmp_path, compact_every=10) as store:
        assert store.table("docs").ids() == [f"d{i}" for i in range(1, 25)]


def test_compaction_starts_on_journal_bytes_too(tmp_path: Path) -> None:
    # Few lines, many bytes (one document rewritten whole): the line count never gets there.
    pad = "x" * 1_000
    with Store.open(tmp_path, compact_every=1_000_000, compact_min_bytes=10_000) as store:
        docs = store.table("docs")
        n = 0
        while (tmp_path / "journal.log").stat().st_size < 10_000:
            assert store._storage._compaction is None
            docs.put("d", {"n": n, "pad": pad})
            n += 1
        assert n == 10  # the write that took the journal past 10,000 bytes started one
        wait_for_compaction(store)
        docs.put("d", {"n": n, "pad": pad})  # trims
        assert len(journal_lines(tmp_path)) == 1
        assert snapshot_docs(tmp_path) == {"d": {"n": n - 1, "pad": pad}}
    with Store.open(tmp_path) as store:  # closing compacts: a snapshot of about 60 KB
        for i in range(60):
            store.table("docs").put(f"e{i}", {"pad": pad})
    snapshot = (tmp_path / "snapshot.json").stat().st_size
    # Past the floor, the journal may grow as large as the snapshot (compact_ratio 1).
    with Store.open(tmp_path, compact_every=1_000_000, compact_min_bytes=1_000) as store:
        assert store._storage.compaction_bytes() == snapshot
        docs = store.table("docs")
        while (tmp_path / "journal.log").stat().st_size < snapshot:
            assert store._storage._compaction is None
            docs.put("d", {"pad": pad})
        wait_for_compaction(store)
    with Store.open(tmp_path, compact_ratio=0.5, compact_min_bytes=1_000) as store:
        assert store._storage.compaction_bytes() == (tmp_path / "snapshot.json").stat().st_size // 2


def test_writes_go_on_during_a_background_compaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = hold_compactions(monkeypatch)
    with Store.open(tmp_path, compact_every=5) as store:
        docs = store.table("docs")
        for i in range(5):
            docs.put(f"d{i}", {"n": i})
        running = store._storage._compaction
        assert running is not None and not running.future.done()
        docs.put("d2", {"n": 20})  # written while the snapshot of the first five is made
        docs.delete("d3")
        for i in range(5, 12):  # past compact_every again: still one compaction at a time
            docs.put(f"d{i}", {"n": i})
        assert store._storage._compaction is running
        assert len(journal_lines(tmp_path)) == 14
        release.set()
        wait_for_compaction(store)
        assert snapshot_docs(tmp_path) == {f"d{i}": {"n": i} for i in range(5)}
        docs.put("d12", {"n": 12})  # trims: the journal keeps what the snapshot lacks
        assert [orjson.loads(line)[0][1] for line in journal_lines(tmp_path)] == [
            "d2",
            "d3",
            *(f"d{i}" for i in range(5, 13)),
        ]
        # Already past compact_every lines since that snapshot: the next write starts another.
        assert store._storage._compaction is None
        docs.put("d13", {"n": 13})
        assert store._storage._compaction is not None
    expected = {"d0": 0, "d1": 1, "d2": 20, "d4": 4} | {f"d{i}": i for i in range(5, 14)}
    assert snapshot_docs(tmp_path) == {k: {"n": v} for k, v in expected.items()}
    assert journal_lines(tmp_path) == []
    with Store.open(tmp_path) as store:
        assert store.table("docs").ids() == list(expected)


def hold_compactions(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Make background compactions wait for the returned event before they start writing."""
    release = threading.Event()
    real = journal_module.encode_and_write_snapshot

    def held(*args: object) -> None:
        release.wait()
        real(*args)  # type: ignore[arg-type]  # the real function's arguments, passed through

    monkeypatch.setattr(journal_module, "encode_and_write_snapshot", held)
    return release


def test_close_and_compact_wait_for_a_running_compaction_and_the_lock_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = hold_compactions(monkeypatch)
    store = Store.open(tmp_path, compact_every=3)
    docs = store.table("docs")
    for i in range(4):
        docs.put(f"d{i}", {"n": i})
    assert store._storage._compaction is not None
    with pytest.raises(StoreLockedError):  # the dir stays owned while its thread writes
        Store.open(tmp_path)
    assert run_child(OPEN_AND_REPORT, str(tmp_path)).returncode == 3
    threading.Timer(0.05, release.set).start()
    store.compact()  # waits for the background one, then compacts in this thread
    assert store._storage._compaction is None
    assert journal_lines(tmp_path) == []
    assert len(snapshot_docs(tmp_path)) == 4
    release.clear()
    for i in range(4, 7):
        docs.put(f"d{i}", {"n": i})
    assert store._storage._compaction is not None
    threading.Timer(0.05, release.set).start()
    store.close()
    assert not (tmp_path / "snapshot.json.tmp").exists()
    assert journal_lines(tmp_path) == []
    assert len(snapshot_docs(tmp_path)) == 7
    assert not [t for t in threading.enumerate() if t.name.startswith("store-compaction")]
    with Store.open(tmp_path) as reopened:
        assert reopened.table("docs").ids() == [f"d{i}" for i in range(7)]


def test_full_rewrite_waits_for_a_running_compaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = hold_compactions(monkeypatch)
    with Store.open(tmp_path, compact_every=2) as store:
        store.table("old").put("a", {"n": 1})
        store.table("old").put("b", {"n": 2})
        threading.Timer(0.05, release.set).start()
        store._storage.write({"docs": {"x": {"n": 3}}})  # the older snapshot must not win
        assert journal_lines(tmp_path) == []
        assert orjson.loads((tmp_path / "snapshot.json").read_bytes())["docs"] == {"x": {"n": 3}}
    with Store.open(tmp_path) as store:
        assert store.table_names() == ["docs"]


def test_failed_background_compaction_is_logged_and_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real = journal_module.encode_and_write_snapshot
    failures = [OSError(errno.ENOSPC, "No space left on device")]

    def flaky(*args: object) -> None:
        if failures:
            raise failures.pop()
        real(*args)  # type: ignore[arg-type]  # the real function's arguments, passed through

    monkeypatch.setattr(journal_module, "encode_and_write_snapshot", flaky)
    with Store.open(tmp_path, compact_every=4) as store:
        docs = store.table("docs")
        for i in range(4):
            docs.put(f"d{i}", {"n": i})
        wait_for_compaction_failure = store._storage._compaction
        assert wait_for_compaction_failure is not None
        with pytest.raises(OSError):
            wait_for_compaction_failure.future.result()
        docs.put("d4", {"n": 4})  # the write itself succeeds
        assert "store compaction failed; will retry" in caplog.text
        assert len(journal_lines(tmp_path)) == 5
        assert not (tmp_path / "snapshot.json").exists()
        for i in range(5, 8):
            docs.put(f"d{i}", {"n": i})
        assert store._storage._compaction is None  # retried after compact_every more lines
        docs.put("d8", {"n": 8})
        wait_for_compaction(store)
        docs.put("d9", {"n": 9})
        assert len(snapshot_docs(tmp_path)) == 9
        assert journal_lines(tmp_path) == [b'[["docs","d9",{"n":9}]]']
    with Store.open(tmp_path) as store:
        assert len(store.table("docs")) == 10


def test_failed_trim_is_logged_and_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real_replace = os.replace

    def replace(src: Path, dst: Path) -> None:
        if Path(dst).name == "journal.log":
            raise OSError(errno.EIO, "Input/output error")
        real_replace(src, dst)

    with Store.open(tmp_path, compact_every=3) as store:
        docs = store.table("docs")
        for i in range(3):
            docs.put(f"d{i}", {"n": i})
        wait_for_compaction(store)
        monkeypatch.setattr(os, "replace", replace)
        docs.put("d3", {"n": 3})
        monkeypatch.setattr(os, "replace", real_replace)
        assert "store compaction failed; will retry" in caplog.text
        assert not (tmp_path / "journal.log.tmp").exists()
        assert len(journal_lines(tmp_path)) == 4
        docs.put("d4", {"n": 4})
        docs.put("d5", {"n": 5})
        assert store._storage._compaction is None
        docs.put("d6", {"n": 6})  # compact_every lines after the failure: the retry starts
        wait_for_compaction(store)
        docs.put("d7", {"n": 7})
        assert journal_lines(tmp_path) == [b'[["docs","d7",{"n":7}]]']
    with Store.open(tmp_path) as store:
        assert store.table("docs").ids() == [f"d{i}" for i in range(8)]


@pytest.mark.parametrize("fsync", [False, True])
def test_failed_write_rolls_back_on_the_journal_that_replaced_the_old_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fsync: bool
) -> None:
    with Store.open(tmp_path, compact_every=2, fsync=fsync) as store:
        docs = store.table("docs")
        docs.put("a", {"n": 1})
        docs.put("b", {"n": 2})
        wait_for_compaction(store)
        docs.put("c", {"n": 3})  # trims: the journal is a new file from here on
        good = (tmp_path / "journal.log").read_bytes()
        assert good == b'[["docs","c",{"n":3}]]\n'
        real_write = os.write

        def disk_full(fd: int, data: bytes) -> int:
            real_write(fd, data[: len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(os, "write", disk_full)
        with pytest.raises(OSError, match="No space"):
            docs.put("d", {"n": 4})
        monkeypatch.setattr(os, "write", real_write)
        assert (tmp_path / "journal.log").read_bytes() == good
        docs.put("e", {"n": 5})
    with Store.open(tmp_path) as store:
        assert store.table("docs").ids() == ["a", "b", "c", "e"]


def test_fsync_store_retries_the_dir_fsync_before_acknowledging_a_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_fsync_dir = journal_module.fsync_dir
    calls: list[str] = []

    def failing_once(path: Path) -> None:
        calls.append("dir")
        if calls.count("dir") == 1:
            raise OSError(errno.EIO, "Input/output error")
        real_fsync_dir(path)

    with Store.open(tmp_path, compact_every=2, fsync=True) as store:
        docs = store.table("docs")
        docs.put("a", {"n": 1})
        docs.put("b", {"n": 2})
        wait_for_compaction(store)
        monkeypatch.setattr(journal_module, "fsync_dir", failing_once)
        docs.put("c", {"n": 3})  # trims; the dir fsync after the rename fails
        assert store._storage._dir_unsynced
        docs.put("d", {"n": 4})  # retried before this write is acknowledged
        assert calls == ["dir", "dir"] and not store._storage._dir_unsynced
        monkeypatch.setattr(journal_module, "fsync_dir", real_fsync_dir)
    with Store.open(tmp_path) as store:
        assert store.table("docs").ids() == ["a", "b", "c", "d"]


def abandon(store: Store) -> None:
    """Leave the store as a SIGKILL would: no compaction, no clean-up; just the lock released."""
    storage = store._storage
    assert storage._executor is not None and storage._fd is not None and storage._lock is not None
    storage._executor.shutdown(wait=True)
    os.close(storage._fd)
    storage._lock.release()
    storage._closed = True


def damage_mark(data_dir: Path, change: Callable[[dict[str, object]], object]) -> None:
    """Change the journal mark in the snapshot's header (which its checksum does not cover)."""
    path = data_dir / "snapshot.json"
    line, rest = path.read_bytes().split(b"\n", 1)
    head = orjson.loads(line + b"}")
    info = head["#snapshot"]["info"]
    info["journal"] = change(info["journal"])
    path.write_bytes(orjson.dumps(head)[:-1] + b"\n" + rest)


@pytest.mark.parametrize(
    "change",
    [
        None,
        lambda mark: mark | {"crc32": mark["crc32"] ^ 1},
        lambda mark: mark | {"inode": mark["inode"] + 1},
        lambda mark: mark | {"size": mark["size"] + 1},
        lambda mark: mark | {"size": mark["size"] - 1},
        lambda mark: mark | {"size": -1},
        lambda mark: "not a mark",
        lambda mark: None,
    ],
)
def test_only_a_mark_that_describes_the_journal_skips_its_lines(
    tmp_path: Path, change: Callable[[dict[str, object]], object] | None
) -> None:
    store = Store.open(tmp_path, compact_every=4)
    docs = store.table("docs")
    docs.put("k2", {"v": 1})
    docs.delete("k2")
    docs.put("k2", {"v": 2})
    docs.put("k1", {"v": 1})  # the 4th line: a snapshot of [k2, k1] in the background
    wait_for_compaction(store)
    abandon(store)  # before any write trims the journal
    assert len(journal_lines(tmp_path)) == 4
    if change is not None:
        damage_mark(tmp_path, change)
    with Store.open(tmp_path) as store:
        docs = store.table("docs")
        assert dict(zip(docs.ids(), docs.values(), strict=True)) == {"k2": {"v": 2}, "k1": {"v": 1}}
        # Replayed whole over the snapshot, the journal moves k2 (deleted and written again).
        assert docs.ids() == (["k2", "k1"] if change is None else ["k1", "k2"])


def test_a_mark_is_read_back_from_the_journal_it_names(tmp_path: Path) -> None:
    """The store keeps no running CRC: the compaction thread reads the marked bytes back, and a
    file that is no longer the marked journal is refused rather than described."""
    store = Store.open(tmp_path, compact_every=3)
    docs = store.table("docs")
    for i in range(3):
        docs.put(f"d{i}", {"n": i})  # the 3rd line starts a compaction
    wait_for_compaction(store)  # (a write now would trim the journal)
    abandon(store)
    raw = (tmp_path / "journal.log").read_bytes()
    header = (tmp_path / "snapshot.json").read_bytes().split(b"\n", 1)[0]
    mark = orjson.loads(header + b"}")["#snapshot"]["info"]["journal"]
    assert mark["size"] == len(raw) and raw.count(b"\n") == 3
    assert mark["crc32"] == zlib.crc32(raw[: mark["size"]])
    assert journal_mark(tmp_path / "journal.log", mark["inode"], 5).crc32 == zlib.crc32(raw[:5])
    (tmp_path / "other").write_bytes(raw)
    os.replace(tmp_path / "other", tmp_path / "journal.log")  # another inode at the same path
    with pytest.raises(OSError, match="replaced"):
        journal_mark(tmp_path / "journal.log", mark["inode"], mark["size"])


def test_memory_store_never_compacts() -> None:
    storage = JournalStorage(None, compact_every=1)
    with Store(storage) as store:
        for i in range(3):
            store.table("docs").put(f"d{i}", {"n": i})
        assert storage._compaction is None and storage._executor is None


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
        for i in range(20):  # enough that half the file is past the header line
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
real_write, real_replace, real_close = os.write, os.replace, os.close

def die():
    os.kill(os.getpid(), signal.SIGKILL)

def write_half_then_die(fd, data):
    if fd != journal_fd:  # the snapshot's temporary file
        real_write(fd, bytes(data[: len(data) // 2]))
        die()
    return real_write(fd, data)

def replace(src, dst):
    if Path(dst).name == "journal.log":  # the snapshot is in place; the new journal written
        die()
    real_replace(src, dst)

def close(fd):
    if fd == journal_fd:  # the new journal is in place
        die()
    real_close(fd)

os.write, os.replace, os.close = {
    "writing": (write_half_then_die, real_replace, real_close),
    "renamed": (real_write, replace, real_close),
    "replaced": (real_write, real_replace, close),
}[stage]
print("compacting", flush=True)
store.compact()
"""


@pytest.mark.parametrize("stage", ["writing", "renamed", "replaced"])
def test_killed_mid_snapshot_loses_nothing(tmp_path: Path, stage: str) -> None:
    with Store.open(tmp_path) as store:  # an earlier snapshot, which the crash must not harm
        store.table("docs").put("d0", {"n": 0})
        store.table("docs").put("early", {"n": -1})
    result = run_child(KILLED_IN_COMPACTION, str(tmp_path), stage)
    assert result.returncode == -signal.SIGKILL, result.stderr
    assert result.stdout == "compacting\n"
    assert (tmp_path / "snapshot.json.tmp").exists() == (stage == "writing")
    assert (tmp_path / "journal.log.tmp").exists() == (stage == "renamed")
    assert len(journal_lines(tmp_path)) == (0 if stage == "replaced" else 301)
    expected = {"early": {"n": -1}} | {
        f"d{i}": {"n": i, "text": "a line\n}\n,{" * (i % 7)} for i in range(1, 300)
    }
    with Store.open(tmp_path) as store:
        docs = store.table("docs")
        assert dict(zip(docs.ids(), docs.values(), strict=True)) == expected
        assert docs.ids() == ["early", *(f"d{i}" for i in range(1, 300))]
    assert not (tmp_path / "snapshot.json.tmp").exists()
    assert not (tmp_path / "journal.log.tmp").exists()
    with Store.open(tmp_path) as store:  # and the snapshot written on that open reads back
        assert len(store.table("docs")) == 300


# Killed (SIGKILL) at a chosen point of a background compaction, with writes acknowledged while
# it ran.  Prints the documents in order as acknowledged, before the write that may not be.
KILLED_IN_BACKGROUND = """
import os, signal, sys, threading, time
from pathlib import Path
import orjson
import simulator.store.journal as journal
from simulator.store import Store
data_dir, stage, fsync = Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "fsync"
store = Store.open(data_dir, compact_every=100, fsync=fsync)
docs = store.table("docs")
real_write, real_replace, real_close = os.write, os.replace, os.close
ready = threading.Event()  # the compaction thread starts once the writes below are done
real_job = journal.encode_and_write_snapshot

def held_job(*args):
    ready.wait()
    real_job(*args)

journal.encode_and_write_snapshot = held_job

def die():
    os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(5)

def write(fd, data):
    if threading.current_thread().name.startswith("store-compaction"):
        real_write(fd, bytes(data[: len(data) // 2]))
        die()
    return real_write(fd, data)

def report():
    print(orjson.dumps(list(zip(docs.ids(), docs.values()))).decode(), flush=True)

# Before the mark: a document deleted and written again, which a replay of these lines over
# the new snapshot would move behind the others.
docs.put("k2", {"v": 1})
docs.delete("k2")
docs.put("k2", {"v": 2})
docs.put("k1", {"v": 1})
for i in range(96):
    docs.put(f"d{i}", {"n": i, "text": "x\\n}" * (i % 5)})
assert store._storage._compaction is not None  # the 100th line started it
# While it runs: more of the same, and a batch.
docs.delete("d5")
docs.put("d5", {"n": 5, "again": True})
docs.put("k1", {"v": 2})
with store.batch():
    docs.put("b1", {"n": 1})
    docs.put("b2", {"n": 2})
for i in range(20):
    docs.put(f"late{i}", {"n": i})
if stage == "writing":
    os.write = write
    report()
    ready.set()
    time.sleep(10)  # killed by the compaction thread
ready.set()
store._storage._compaction.future.result()
if stage == "renamed":  # the snapshot is in place, the journal still whole
    report()
    die()
if stage == "trimming":
    os.replace = lambda src, dst: real_replace(src, dst) if Path(dst).suffix != ".log" else die()
else:  # "trimmed": the new journal is in place
    old_fd = store._storage._fd
    os.close = lambda fd: die() if fd == old_fd else real_close(fd)
report()
docs.put("last", {"n": -1})  # durable, then killed while it trims the journal
"""


@pytest.mark.parametrize("fsync", ["no-fsync", "fsync"])
@pytest.mark.parametrize("stage", ["writing", "renamed", "trimming", "trimmed"])
def test_killed_in_a_background_compaction_loses_nothing(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, stage: str, fsync: str
) -> None:
    with Store.open(tmp_path) as store:  # an earlier snapshot, which the crash must not harm
        store.compact()
    result = run_child(KILLED_IN_BACKGROUND, str(tmp_path), stage, fsync)
    assert result.returncode == -signal.SIGKILL, result.stderr
    acknowledged = [tuple(item) for item in orjson.loads(result.stdout)]
    assert len(acknowledged) == 120
    assert (tmp_path / "snapshot.json.tmp").exists() == (stage == "writing")
    assert (tmp_path / "journal.log.tmp").exists() == (stage == "trimming")
    snapshot = orjson.loads((tmp_path / "snapshot.json").read_bytes())
    if stage == "writing":
        assert "docs" not in snapshot  # still the earlier one
    else:
        assert len(snapshot["docs"]) == 98
        assert snapshot["#snapshot"]["info"]["journal"]["size"] > 0
    # 100 lines before the mark, 24 after it and the last write's: the trim drops the 100.
    lines = {"writing": 124, "renamed": 124, "trimming": 125, "trimmed": 25}[stage]
    assert len(journal_lines(tmp_path)) == lines
    if stage == "renamed":
        # A copy has new inodes: the mark does not name its journal, which is replayed whole.
        # Same documents; only k2, deleted and written again before the mark, moves.
        copy = tmp_path_factory.mktemp("copy") / "data"
        shutil.copytree(tmp_path, copy)
        with Store.open(copy) as store:
            docs = store.table("docs")
            assert dict(zip(docs.ids(), docs.values(), strict=True)) == dict(acknowledged)
    with Store.open(tmp_path) as store:
        docs = store.table("docs")
        recovered = list(zip(docs.ids(), docs.values(), strict=True))
    last = ("last", {"n": -1})
    if stage in ("trimming", "trimmed"):  # written, but killed before it returned
        assert recovered in (acknowledged, [*acknowledged, last])
    else:
        assert recovered == acknowledged  # every document, in the same order
    assert not (tmp_path / "snapshot.json.tmp").exists()
    assert not (tmp_path / "journal.log.tmp").exists()
    assert journal_lines(tmp_path) == []  # open compacted


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


# 7: background compactions start, finish and trim the journal every few writes, so the kills
# land in all of their windows.
@pytest.mark.parametrize("compact_every", ["40", "7"])
def test_sigkill_loses_no_acknowledged_write(tmp_path: Path, compact_every: str) -> None:
    rng = random.Random(1234)
    acked: set[str] = set()
    deleted: set[str] = set()
    maybe_deleted: set[str] = set()
    deadline = time.monotonic() + 4.0
    trials = 0
    # At least 5 kills whatever the machine's load (a loaded CI made only 4 in the time bound, and
    # the test failed on its count), then more while the 4 s last, up to 15.
    while trials < 5 or (trials < 15 and time.monotonic() < deadline):
        trials += 1
        child = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path), compact_every, f"t{trials}"],
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
    assert len(acked) > 50, "the writer barely ran; the test proves nothing"


def test_a_kept_secret_is_made_once_and_readable_by_its_owner_only(tmp_path: Path) -> None:
    from simulator.store.files import read_or_make_secret

    path = tmp_path / "namespaces" / ".secret"
    first = read_or_make_secret(path)
    assert len(first) == 32 and read_or_make_secret(path) == first
    # It derives every namespace's keys: other users of the machine must not read it.
    assert path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in path.parent.iterdir()] == [".secret"]
