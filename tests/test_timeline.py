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
from app.receiver_counts import ReceiverCounts
from app.timeline import (
    SAMPLE_OUTCOMES,
    flush,
    interval_of,
    minute_key,
    minute_of,
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


def minutes(redis: Redis) -> dict[str, int]:
    """The 1-minute counts, summed (a flush may land in the minute after the test's)."""
    summed: dict[str, int] = {}
    for key in redis.keys("webhook:timeline:inbound:minute:*"):
        for name, value in redis.hgetall(key).items():
            summed[name.decode()] = summed.get(name.decode(), 0) + int(value)
    return summed


def test_refusals_are_counted_only_when_flushed_and_nothing_else_is_written(
    make_harness: Callable[..., Harness], redis: Redis
) -> None:
    harness = make_harness()
    counts = ReceiverCounts(frozenset(["inbound"]))
    run(harness.settings.redis_url, lambda c: note_fresh(c, "webhook", counts))
    assert harness.send(b'{"id": "x"}', secret="wrong").status_code == 401
    assert redis.keys("webhook:*") == []  # the request itself wrote nothing
    now = time.time()
    run(harness.settings.redis_url, lambda c: flush(c, "webhook", counts))
    assert sorted(redis.keys("webhook:*")) == sorted(
        [
            timeline_key("webhook", "inbound", interval_of(now)).encode(),
            minute_key("webhook", "inbound", minute_of(now)).encode(),
        ]
    )
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


def test_retries_are_counted_from_the_workers_retried_counter_in_both_grains(
    redis: Redis, redis_server: RedisServer
) -> None:
    url = redis_server.url
    counts = ReceiverCounts(frozenset(["inbound"]))
    run(url, lambda c: note_fresh(c, "webhook", counts))
    redis.hset(STATS, mapping={"retried": 4, "done": 1, "requeued": 2})
    run(url, lambda c: flush(c, "webhook", counts))
    assert today(redis) == {"retried": 4, "done": 1}
    assert minutes(redis) == {"retried": 4, "done": 1}


def test_the_minutes_are_kept_two_hours_and_the_quarters_eight_days(redis: Redis) -> None:
    redis.hset(STATS, "done", 1)
    now = time.time()
    keys, args = sample_call("webhook", "inbound", now, "zero")
    redis.eval(SAMPLE_OUTCOMES, len(keys), *keys, *args)
    assert 0 < redis.ttl(minute_key("webhook", "inbound", minute_of(now))) <= 2 * 3600
    assert (
        7 * 86_400 < redis.ttl(timeline_key("webhook", "inbound", interval_of(now))) <= 8 * 86_400
    )


def test_a_retried_counter_older_than_this_version_is_noted_not_poured(redis: Redis) -> None:
    # An older version sampled done and dead_lettered only: retried's history stays out.
    redis.hset(STATS, mapping={"done": 10, "retried": 300})
    redis.hset("webhook:timeline-seen:inbound", mapping={"done": 10, "dead_lettered": 0})
    redis.hincrby(STATS, "done", 1)
    keys, args = sample_call("webhook", "inbound", time.time(), "skip")
    assert redis.eval(SAMPLE_OUTCOMES, len(keys), *keys, *args) == 1
    assert today(redis) == {"done": 1}
    redis.hincrby(STATS, "retried", 2)
    redis.eval(SAMPLE_OUTCOMES, len(keys), *keys, *args)
    assert today(redis) == {"done": 1, "retried": 2}
