"""Per-write cost of simulator.store vs tinydb's default JSONStorage + Table.insert.

Run:  python bench/store_write.py [--samples N] [--fsync]

For each size N the store is pre-filled with N documents (in one batch, so the
journal does not trigger compaction), then SAMPLES single puts of new documents
are timed one by one; the median is reported in µs.  tinydb's baseline is
measured the same way (pre-filled with insert_multiple) at 1k and 5k only, since
its cost grows with N.  Also printed: one compaction at each size, which our
store pays once per ``compact_every`` (default 50 000) writes.

Not part of the test suite.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tinydb import TinyDB

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from simulator.store import Store

SIZES = (1_000, 5_000, 20_000, 50_000)
TINYDB_SIZES = (1_000, 5_000)


def make_doc(i: int) -> dict[str, Any]:
    """A payment-shaped document of ~400 bytes."""
    return {
        "id": f"pay_{i:08d}",
        "object": "payment",
        "amount": "1234.50",
        "currency": "BRL",
        "status": "authorized",
        "customer": {"id": f"cus_{i}", "email": "buyer@example.com", "document": "12345678909"},
        "metadata": {"order": f"ord_{i}"},
        "events": [
            {"type": "created", "at": "2024-01-01T00:00:00Z"},
            {"type": "authorized", "at": "2024-01-01T00:00:01Z"},
        ],
        "created_at": "2024-01-01T00:00:00Z",
        "provider": "sim",
        "attempts": 1,
    }


def median_us(samples: int, write: Callable[[int, dict[str, Any]], None], start: int) -> float:
    times: list[int] = []
    for i in range(start, start + samples):
        doc = make_doc(i)  # built outside the timed region
        t0 = time.perf_counter_ns()
        write(i, doc)
        times.append(time.perf_counter_ns() - t0)
    return statistics.median(times) / 1_000


def bench_store(n: int, samples: int, fsync: bool) -> tuple[float, float]:
    """Return (median put µs, one compaction ms) with n docs stored."""
    with tempfile.TemporaryDirectory() as tmp, Store.open(Path(tmp), fsync=fsync) as store:
        payments = store.table("payments")
        with store.batch():
            for i in range(n):
                payments.put(f"pay_{i}", make_doc(i))
        per_put = median_us(samples, lambda i, doc: payments.put(f"pay_{i}", doc), n)
        t0 = time.perf_counter()
        store.compact()
        return per_put, (time.perf_counter() - t0) * 1_000


def bench_tinydb(n: int, samples: int) -> float:
    with tempfile.TemporaryDirectory() as tmp, TinyDB(Path(tmp) / "db.json") as db:
        table = db.table("payments")
        table.insert_multiple(make_doc(i) for i in range(n))
        return median_us(samples, lambda i, doc: table.insert(doc), n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2_000, help="timed puts per size")
    parser.add_argument("--fsync", action="store_true", help="also measure fsync=True")
    args = parser.parse_args()

    print(f"median cost of one write (µs), {args.samples} samples per size\n")
    print(f"{'docs':>8}  {'store':>10}  {'store fsync':>12}  {'tinydb':>10}  {'compaction':>11}")
    for n in SIZES:
        ours, compact_ms = bench_store(n, args.samples, fsync=False)
        synced = f"{bench_store(n, 200, fsync=True)[0]:10.1f}" if args.fsync else "-"
        baseline = (
            f"{bench_tinydb(n, max(50, args.samples // 10)):10.1f}" if n in TINYDB_SIZES else "-"
        )
        print(f"{n:>8}  {ours:10.1f}  {synced:>12}  {baseline:>10}  {compact_ms:8.1f} ms")


if __name__ == "__main__":
    main()
