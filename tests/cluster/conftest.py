"""The running cluster the test modules of this directory share, one per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cluster.cluster import Cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """`payorch serve --workers 2` (real supervisor, workers and nginx), for the module."""
    running = Cluster(tmp_path_factory.mktemp("cluster") / "data", 2)
    yield running
    running.kill()
