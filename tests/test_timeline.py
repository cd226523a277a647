"""The day's counters behind the Events page (app/timeline.py): written off the request path,
each count taken once, nothing written for a source that has had nothing."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest
import redis.asyncio as aioredis
from redis import Redis

import app.timeline
from app.timeline import (
    SAMPLE_OUTCOMES,
    ReceiverCounts,
    flush,
    interval_of,
    note_fresh,
    sample_call,
    timeline_key,
)
from tests.conftest import Harness
from workers.dev.redis_server import RedisServer

STATS = "webhook:stats:inbound"


@pytest.fixture(autouse=True)
def quiet_flusher(monkeypatch: pytest.MonkeyPatch) -> None:
    """The receiver's own flusher waits an hour: each test flushes when it means to."""
    monkeypatch.setattr(app.timeline, "FLUSH_EVERY", 3600.0)


def run(redis_url: str, step: Callable[[aioredis.Redis], object]) -> None:
    async def go() -> None:
        client = aioredis.Redis.from_url(redis_url)
        try:
            await step(client)  # type: ignore[misc]
        finally:
            await client.aclose()

    asyncio.run(go())


def today(redis: Redis) -> dict[str, int]:
    key = timeline_key("webhook", "inbound", interval_of(time.time()))
    return {k.decode(): int(v) for k, v in redis.hgetall(key).items()}


def test_refusals_are_counted_only_when_flushed_and_nothing_else_is_written(
    make_harness: Callable[..., Harness], redis: Redis
) -> None:
    harness = make_harness()
    counts = ReceiverCounts(frozenset(["inbound"]))
    run(harness.settings.redis_url, lambda c: note_fresh(c, "webhook", counts))
    assert harness.send(b'{"id": "x"}', secret="wrong").status_code == 401
    assert redis.keys("webhook:*") == []  # the request itself wrote nothing
    run(harness.settings.redis_url, lambda c: flush(c, "webhook", counts))
    assert redis.keys("webhook:*") == [
        timeline_key("webhook", "inbound", interval_of(time.time())).encode()
    ]
    assert today(redis) == {"rejected": 1}


def test_counters_older_than_the_timeline_are_noted_not_poured_into_one_interval(
    redis: Redis, redis_server: RedisServer
) -> None:
    url = redis_server.url
    redis.hset(STATS, mapping={"done": 5000, "dead_lettered": 40})  # months of history
    counts = ReceiverCounts(frozenset(["inbound"]))
    run(url, lambda c: note_fresh(c, "webhook", counts))
    run(url, lambda c: flush(c, "webhook", counts))
    assert today(redis) == {}
    redis.hincrby(STATS, "done", 2)
    redis.hincrby(STATS, "ignored", 1)
    redis.hincrby(STATS, "dead_lettered", 1)
    run(url, lambda c: flush(c, "webhook", counts))
    assert today(redis) == {"done": 3, "dead": 1}


def test_counters_that_appear_after_a_receiver_started_count_from_zero(
    redis: Redis, redis_server: RedisServer
) -> None:
    url = redis_server.url
    counts = ReceiverCounts(frozenset(["inbound"]))
    run(url, lambda c: note_fresh(c, "webhook", counts))
    redis.hset(STATS, mapping={"done": 2, "dead_lettered": 1})
    run(url, lambda c: flush(c, "webhook", counts))
    run(url, lambda c: flush(c, "webhook", counts))  # taken once, however often sampled
    assert today(redis) == {"done": 2, "dead": 1}


def test_the_page_never_starts_counting_a_source_itself(redis: Redis) -> None:
    redis.hset(STATS, "done", 3)
    keys, args = sample_call("webhook", "inbound", time.time(), "skip")
    assert redis.eval(SAMPLE_OUTCOMES, len(keys), *keys, *args) == 0
    assert redis.keys("webhook:timeline*") == []
