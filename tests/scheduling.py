"""The suite's order on xdist's workers: the tests that run for many seconds start first.

`make check` runs `pytest -n 4 --dist load --maxschedchunk 1`: each worker holds two tests and
takes the next from the collection when one ends. Tests marked `long(seconds)` are collected
first, longest first, so the workers start on them and the short tests fill in at the end.
In file order, a 2-minute test collected late ran alone while the other workers had finished.
The seconds are a rough figure from `--durations` on the 2-core machine, for the order only.
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "long(seconds): runs for many seconds; scheduled first (tests/scheduling.py)"
    )


def expected_seconds(item: pytest.Item) -> float:
    marker = item.get_closest_marker("long")
    return float(marker.args[0]) if marker is not None else 0.0


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=expected_seconds, reverse=True)  # stable: the others keep their order
