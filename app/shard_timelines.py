"""A Redis Cluster's other shards in the receivers' timeline flush (`app/timeline.py`): each
shard's workers count their outcomes in that shard (`<shard prefix>:stats:<source>`), and the
receivers sample them into that shard's own timeline, whose keys share the counters' slot.
The sampling script is atomic per shard and source, so any number of receivers sample
without counting anything twice; the receivers' own answers are counted in the first shard
only, which is not one of these."""

from __future__ import annotations

from dataclasses import dataclass, field

import redis.asyncio as aioredis

from app.timeline import queue_fresh, queue_samples


@dataclass
class ShardOutcomes:
    """One other shard; `fresh` as `ReceiverCounts.fresh` (`app/receiver_counts.py`), for
    this shard's counters."""

    redis: aioredis.Redis
    prefix: str
    fresh: set[str] = field(default_factory=set)
    noted: bool = False  # whether `fresh` was read: a shard away at the start is asked later

    async def note(self, sources: frozenset[str]) -> None:
        async with self.redis.pipeline(transaction=False) as pipe:
            fresh = queue_fresh(pipe, self.prefix, sources)
            found = await pipe.execute()
        self.fresh, self.noted = fresh(found), True

    async def sample(self, sources: frozenset[str], now: float) -> None:
        if not self.noted:
            await self.note(sources)
        async with self.redis.pipeline(transaction=False) as pipe:
            queue_samples(pipe, self.prefix, sources, self.fresh, now)
            await pipe.execute()
