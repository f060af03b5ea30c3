"""The live tail listens to the request log only while someone tails it."""

from __future__ import annotations

from simulator.domain.requestlog import LogRow, RequestFilters, RequestLog, make_row
from simulator.events.stream import FrameQueue
from simulator.http.request_tail import RequestTail


def row(n: int) -> LogRow:
    return make_row(
        f"req_{n:024x}", 1.0, 1.0, "GET", "/api/v1/me", "", 200, "mer_a", "sandbox", 1.0, False,
        (), None, b"{}",
    )  # fmt: skip


def ids(queue: FrameQueue) -> list[int]:
    frames = [queue.get_nowait() for _ in range(queue.qsize())]
    return [int(bytes(frame).split(b"\n")[0][len(b"id: req_") :], 16) for frame in frames]


def test_the_tail_listens_only_while_someone_tails() -> None:
    log = RequestLog(10)
    tail = RequestTail(log)
    assert log._listeners == []  # recording a request costs the tail nothing
    for n in (0, 100):  # the first reader after the last one left is listened for again
        with tail.subscribe("mer_a", RequestFilters()) as first:
            with tail.subscribe("mer_a", RequestFilters()) as second:
                log.record(row(n))
            log.record(row(n + 1))
            assert len(log._listeners) == 1
        assert log._listeners == []
        log.record(row(n + 2))
        assert (ids(first), ids(second)) == ([n, n + 1], [n])
