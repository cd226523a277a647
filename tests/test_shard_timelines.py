"""A cluster's other shards in the receivers' timeline flush (`app/shard_timelines.py`): each
shard's workers' outcomes sampled into its own timeline, by any number of receivers, each
outcome counted once; a shard away when a receiver started is asked later, and what its
workers did after that is counted. On one real Redis, a prefix standing for each shard."""

from __future__ import annotations

import asyncio
import time

import redis.asyncio as aioredis
from redis import Redis

from app.keys import Keys
from app.shard_timelines import ShardOutcomes
from app.timeline import minute_key, minute_of
from workers.dev.redis_server import RedisServer

SOURCES = frozenset(["inbound"])


def counted(redis: Redis, prefix: str) -> int:
    """The outcomes done in the shard's timeline this minute."""
    return int(redis.hget(minute_key(prefix, "inbound", minute_of(time.time())), "done") or 0)


def done(redis: Redis, prefix: str, count: int) -> None:
    """The shard's workers settle `count` more events (their counter, as outcomes.py keeps it)."""
    redis.hincrby(Keys(prefix, "").stats("inbound"), "done", count)


def test_two_receivers_sampling_a_shard_count_each_outcome_once(
    redis_server: RedisServer, redis: Redis
) -> None:
    prefix = "{wh01.0}:webhook"

    async def steps() -> None:
        first = ShardOutcomes(aioredis.Redis.from_url(redis_server.url), prefix)
        second = ShardOutcomes(aioredis.Redis.from_url(redis_server.url), prefix)
        await first.note(SOURCES)  # no counters yet: all that comes is new
        done(redis, prefix, 5)
        await second.note(SOURCES)  # counters already there: it only notes them
        await first.sample(SOURCES, time.time())
        await second.sample(SOURCES, time.time())
        done(redis, prefix, 3)
        await second.sample(SOURCES, time.time())
        await first.sample(SOURCES, time.time())

    asyncio.run(steps())
    assert counted(redis, prefix) == 8


def test_a_shard_away_at_the_start_is_asked_at_its_first_sample(
    redis_server: RedisServer, redis: Redis
) -> None:
    prefix = "{wh02.3}:webhook"

    async def steps() -> None:
        late = ShardOutcomes(
            aioredis.Redis.from_url(redis_server.url), prefix
        )  # its note never got through
        await late.sample(SOURCES, time.time())
        done(redis, prefix, 4)
        await late.sample(SOURCES, time.time())

    asyncio.run(steps())
    assert counted(redis, prefix) == 4
