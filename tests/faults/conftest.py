"""Fixtures for the fault tests: Redis servers a test may stop, kill and restart."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from redis import Redis

from tests.conftest import SECRET, event_body, sign
from tests.processes import Stack
from workers.redis_server import RedisServer

AUTH = ("ops", "fault-dashboard-password")


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A Redis of this test's own (AOF, fsync always), on a port that survives restarts."""
    server = RedisServer(tmp_path / "redis").start()
    yield server
    server.stop()


@pytest.fixture
def make_stack(tmp_path: Path) -> Iterator[Callable[..., Stack]]:
    stacks: list[Stack] = []

    def make(redis_url: str, **env: str) -> Stack:
        stack = Stack(
            {
                "REDIS_URL": redis_url,
                "HOST": "127.0.0.1",
                "WEBHOOK_SIGNING_SECRET": SECRET,
                "WEBHOOK_HANDLERS": "tests.e2e_handlers",
                "WEBHOOK_RETRY_INTERVALS": "1",
                "WEBHOOK_MAINTENANCE_INTERVAL": "10",
                "RQ_DASHBOARD_USERNAME": AUTH[0],
                "RQ_DASHBOARD_PASSWORD": AUTH[1],
                **env,
            },
            tmp_path,
        )
        stacks.append(stack)
        return stack

    yield make
    for stack in stacks:
        stack.stop_all()


def send(
    web_url: str,
    event_id: str,
    event_type: str = "order.created",
    timeout: float = 10,
    **extra: object,
) -> httpx.Response:
    body = event_body(event_id, event_type, **extra)
    return httpx.post(
        f"{web_url}/webhooks/inbound",
        content=body,
        headers={"X-Signature-256": sign(body)},
        timeout=timeout,
    )


def effects(redis: Redis, event_id: str) -> int:
    return int(redis.get(f"effects:{event_id}") or 0)
