"""Fixtures of the high-availability tests: replicated Redis clusters with sentinels.

Every test here is marked `ha`: each starts its own servers on free ports in its own
temporary directory, so they may run in parallel with each other and with the rest of the
suite (`pytest -n`, with pytest-xdist), or alone: `pytest -m ha`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import failed
from tests.ha.harness import Cluster


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.ha)


@pytest.fixture
def make_cluster(
    tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Callable[..., Cluster]]:
    """Starts a primary, replicas and sentinels (see `Cluster`); stops them all. When the
    test failed, prints every server's and sentinel's log first: a failover that did not
    happen is read there (elections, +sdown, replicas refused)."""
    clusters: list[Cluster] = []

    def make(**options: Any) -> Cluster:
        cluster = Cluster(tmp_path / f"cluster-{len(clusters)}", **options)
        clusters.append(cluster)
        return cluster.start()

    yield make
    if failed(request):
        for cluster in clusters:
            print(cluster.logs())
    for cluster in clusters:
        cluster.stop()
