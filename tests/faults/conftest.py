"""Fixtures for the fault tests: Redis servers a test may stop, kill and restart."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.faults.browser import OtherOrigin, chromium, other_origin
from workers.dev.redis_server import RedisServer


@pytest.fixture
def own_redis(make_redis: Callable[..., RedisServer]) -> RedisServer:
    """A Redis of this test's own (AOF, fsync always), on a port that survives restarts."""
    return make_redis()


@pytest.fixture
def browser() -> Iterator[object]:
    """Headless Chromium; the tests that need it fail under CI=true when it is missing."""
    yield from chromium()


@pytest.fixture
def attacker() -> Iterator[OtherOrigin]:
    """A page on another origin, served until the test ends."""
    yield from other_origin()
