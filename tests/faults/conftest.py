"""Fixtures for the fault tests: Redis servers a test may stop, kill and restart."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from workers.dev.redis_server import RedisServer


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A Redis of this test's own (AOF, fsync always), on a port that survives restarts."""
    server = RedisServer(tmp_path / "redis").start()
    yield server
    server.stop()
