"""Fixtures of the Redis Cluster tests: three primaries and their replicas (see
`ShardedRedis`), each test's own, on ports of their own: parallel-safe under `pytest -n`."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.harness import ShardedRedis
from tests.conftest import failed

INSTALL = {
    "redis-server": "apt-get install redis-server",
    "valkey-server": "apt-get install -t bookworm-backports valkey-server",
}


def require(server: str) -> None:
    """Skips a test whose server is not installed; under CI, where .ci/run installs both,
    fails it instead: a skip there would hide that the cluster was never tested."""
    if shutil.which(server) is not None:
        return
    install = INSTALL.get(Path(server).name, f"install {server}")
    if os.environ.get("CI") == "true":
        pytest.fail(f"{server} is missing: .ci/run installs it ({install})")
    pytest.skip(f"{server} not installed ({install})")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.cluster)


@pytest.fixture
def make_sharded_redis(
    tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Callable[..., ShardedRedis]]:
    """Starts a Redis Cluster (options: `server`, `node_timeout_ms`, `options` for every
    node); stops every process it started. When the test failed, prints every node's log
    first: a failover or a slot move that did not happen is read there."""
    clusters: list[ShardedRedis] = []

    def make(**options: Any) -> ShardedRedis:
        require(options.get("server", "redis-server"))
        cluster = ShardedRedis(tmp_path / f"sharded-{len(clusters)}", **options)
        clusters.append(cluster)
        return cluster.start()

    yield make
    if failed(request):
        for cluster in clusters:
            print(cluster.logs())
    for cluster in clusters:
        cluster.stop()


@pytest.fixture
def browser() -> Iterator[object]:
    """Headless Chromium, as tests/faults/ drive it (the dashboard's pages)."""
    from tests.faults.browser import chromium

    yield from chromium()
