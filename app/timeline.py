"""Counts per source over time, for the dashboard's Events page chart.

Two grains, each one hash per source and bucket with the counts `accepted`, `duplicate`,
`rejected`, `done`, `retried` and `dead`:
- `<prefix>:timeline:<source>:<interval start>`: 15 minutes, kept 8 days (the day, and the
  week summed by the hour when it is read; the same keys as before, so an upgrade keeps its
  history);
- `<prefix>:timeline:<source>:minute:<minute start>`: 1 minute, kept 2 hours (the hour).
Source names hold no colon (app/sources.py), so the two never meet. They are written off the
request path, by the receiver process every FLUSH_EVERY seconds:
- the receiver's answers are already counted by prometheus-client (webhooks_received_total,
  webhooks_rejected_total); each process adds its counters' growth since its last flush;
- each source's last acceptance, when this process's gauge of it grew (`last_accepted.py`);
- the workers' outcomes are cumulative counters in `<prefix>:stats:<source>`; a script adds
  their growth since it last looked, atomically, so that any number of receivers (and the
  Events page itself) may run it without counting anything twice. Counters that a receiver
  saw appear count from zero; counters older than the timeline (an upgrade) are only noted,
  rather than poured into one interval.
On a Redis Cluster the receivers' counts go to the first shard's timeline, and each shard's
workers' counters are sampled into that shard's own (its keys share the counters' slot;
`app/shard_timelines.py`): the dashboard's front sums every shard's
(`workers/ops/front_picture.py`).
Nothing is written for a source until it has had a delivery or an outcome.
A count reaches its interval within FLUSH_EVERY seconds; one near an interval's end may land
in the next.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Protocol

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from app.keys import Keys
from app.last_accepted import AcceptedMarks
from app.receiver_counts import ReceiverCounts

INTERVAL = 900
MINUTE = 60
WINDOW = 86_400
KEEP = 8 * WINDOW  # the week, and a day's margin
KEEP_MINUTES = 2 * 3600  # the hour, and an hour's margin
FLUSH_EVERY = 5.0
FIELDS = ("accepted", "duplicate", "rejected", "done", "retried", "dead")
# The workers' outcome counters (app/jobstate.py Outcome), and the count each one adds to.
# `requeued` is an operator's act, not a delivery's outcome: not drawn.
OUTCOMES = {
    "done": "done",
    "ignored": "done",
    "stale": "done",
    "retried": "retried",
    "dead_lettered": "dead",
}


def interval_of(timestamp: float) -> int:
    return int(timestamp // INTERVAL * INTERVAL)


def minute_of(timestamp: float) -> int:
    return int(timestamp // MINUTE * MINUTE)


def timeline_key(prefix: str, source: str, interval: int) -> str:
    return Keys(prefix, "").timeline(source, interval)


def minute_key(prefix: str, source: str, minute: int) -> str:
    """Beside Keys.timeline's 15-minute hashes, under the same `<prefix>:timeline:` (what
    the suite's key checks and an operator's SCAN already set apart as the chart's)."""
    return f"{prefix}:timeline:{source}:minute:{minute}"


def targets(prefix: str, source: str, now: float) -> list[tuple[str, int]]:
    """The buckets a count taken at `now` adds to, each with its lifetime."""
    return [
        (timeline_key(prefix, source, interval_of(now)), KEEP),
        (minute_key(prefix, source, minute_of(now)), KEEP_MINUTES),
    ]


# KEYS: the workers' counters, what was last seen of them, then the buckets' hashes.
# ARGV: what to do when nothing was seen yet: `zero` (count all, the counters are new),
# `baseline` (only note them: they hold history from before this version), `skip` (leave
# the choice to a receiver); then each bucket's lifetime; then pairs (counter, field).
# Nothing is written before the workers' counters exist. A counter this version adds
# (`retried`) but an older one never sampled is only noted too: its history stays out.
SAMPLE_OUTCOMES = """
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
if redis.call('EXISTS', KEYS[2]) == 0 and ARGV[1] == 'skip' then
  return 0
end
local buckets = #KEYS - 2
for i = 2 + buckets, #ARGV, 2 do
  local now = tonumber(redis.call('HGET', KEYS[1], ARGV[i]) or '0')
  local seen = redis.call('HGET', KEYS[2], ARGV[i])
  if not seen and ARGV[1] == 'zero' then
    seen = '0'
  end
  if seen and now > tonumber(seen) then
    for b = 1, buckets do
      redis.call('HINCRBY', KEYS[2 + b], ARGV[i + 1], now - tonumber(seen))
      redis.call('EXPIRE', KEYS[2 + b], ARGV[1 + b])
    end
  end
  redis.call('HSET', KEYS[2], ARGV[i], now)
end
return 1
"""


def sample_call(
    prefix: str, source: str, now: float, first: str
) -> tuple[list[str], list[str | int]]:
    """KEYS and ARGV of SAMPLE_OUTCOMES for one source; `first`: zero, baseline or skip."""
    keys = [Keys(prefix, "").stats(source), Keys(prefix, "").timeline_seen(source)]
    buckets = targets(prefix, source, now)
    keys += [key for key, _ in buckets]
    pairs: list[str | int] = [item for pair in OUTCOMES.items() for item in pair]
    return keys, [first, *(keep for _, keep in buckets), *pairs]


async def note_fresh(redis: aioredis.Redis, prefix: str, counts: ReceiverCounts) -> None:
    """Which sources have no workers' counters yet (read only: a receiver that only ever
    refuses requests writes nothing but their count)."""
    marks = AcceptedMarks(Keys(prefix, "").last_accepted, counts.sources)
    async with redis.pipeline(transaction=False) as pipe:
        fresh = queue_fresh(pipe, prefix, counts.sources)
        pipe.hgetall(marks.key)
        *found, stored = await pipe.execute()
    counts.fresh = fresh(found)
    marks.restore(stored)
    counts.marks = marks


def queue_fresh(pipe: Any, prefix: str, sources: frozenset[str]) -> Callable[[list[int]], set[str]]:
    """Ask which sources have no workers' counters under `prefix`; what reads the replies."""
    names = sorted(sources)
    for source in names:
        pipe.exists(Keys(prefix, "").stats(source))
    return lambda found: {name for name, exists in zip(names, found, strict=True) if not exists}


def queue_samples(
    pipe: Any, prefix: str, sources: frozenset[str], fresh: set[str], now: float
) -> None:
    """Sample each source's workers' counters under `prefix` into its timeline."""
    for source in sorted(sources):
        first = "zero" if source in fresh else "baseline"
        keys, args = sample_call(prefix, source, now, first)
        pipe.eval(SAMPLE_OUTCOMES, len(keys), *keys, *args)


class OtherShard(Protocol):
    """A cluster's other shard, whose workers' counters the receivers sample into its own
    timeline (`app/shard_timelines.py`)."""

    async def note(self, sources: frozenset[str]) -> None: ...

    async def sample(self, sources: frozenset[str], now: float) -> None: ...


async def flush(redis: aioredis.Redis, prefix: str, counts: ReceiverCounts) -> None:
    """One round trip: this process's answers since the last flush, and the workers'
    outcomes since anyone last sampled them."""
    now = time.time()
    pending = counts.pending()
    if counts.marks is None:  # the start's read did not get through: from now on
        counts.marks = AcceptedMarks(Keys(prefix, "").last_accepted, counts.sources)
    marks = counts.marks
    accepted = marks.pending()
    async with redis.pipeline(transaction=False) as pipe:
        marks.add_to(pipe, accepted)
        for (source, name), count in pending.items():
            for key, keep in targets(prefix, source, now):
                pipe.hincrby(key, name, count)
                pipe.expire(key, keep)
        queue_samples(pipe, prefix, counts.sources, counts.fresh, now)
        await pipe.execute()
    counts.commit(pending)
    marks.commit(accepted)


async def _quietly(work: Awaitable[None], wait: float) -> None:
    """A Redis that is away only delays the counts: what was not flushed goes next time."""
    with contextlib.suppress(RedisError, TimeoutError):
        async with asyncio.timeout(wait):
            await work


async def start_timeline(
    redis: aioredis.Redis,
    prefix: str,
    sources: Iterable[str],
    others: Sequence[OtherShard] = (),
) -> asyncio.Task[None]:
    """Note which workers' counters are new, then flush every FLUSH_EVERY seconds until
    the task is cancelled, and once more then. `others`: a cluster's other shards."""
    counts = ReceiverCounts(frozenset(sources))
    # Never holds startup long; one shard that does not answer leaves the others' noted.
    await asyncio.gather(
        _quietly(note_fresh(redis, prefix, counts), wait=1.0),
        *(_quietly(s.note(counts.sources), wait=1.0) for s in others),
    )

    async def once() -> None:
        now = time.time()
        # At once: a shard that is away delays only its own counts.
        await asyncio.gather(
            _quietly(flush(redis, prefix, counts), wait=FLUSH_EVERY),
            *(_quietly(s.sample(counts.sources, now), wait=FLUSH_EVERY) for s in others),
        )

    async def run() -> None:
        try:
            while True:
                await asyncio.sleep(FLUSH_EVERY)
                await once()
        finally:
            with contextlib.suppress(RedisError, TimeoutError, asyncio.CancelledError):
                async with asyncio.timeout(1):
                    await flush(redis, prefix, counts)

    return asyncio.create_task(run())
