"""The last day per source in 15-minute intervals, for the dashboard's Events page.

One hash per source and interval, `<prefix>:timeline:<source>:<interval start>`, with the
counts `accepted`, `duplicate`, `rejected`, `done` and `dead`, kept two days. They are
written off the request path, by the receiver process every FLUSH_EVERY seconds:
- the receiver's answers are already counted by prometheus-client (webhooks_received_total,
  webhooks_rejected_total); each process adds its counters' growth since its last flush;
- the workers' outcomes are cumulative counters in `<prefix>:stats:<source>`; a script adds
  their growth since it last looked, atomically, so that any number of receivers (and the
  Events page itself) may run it without counting anything twice. Counters that a receiver
  saw appear count from zero; counters older than the timeline (an upgrade) are only noted,
  rather than poured into one interval.
Nothing is written for a source until it has had a delivery or an outcome.
A count reaches its interval within FLUSH_EVERY seconds; one near an interval's end may land
in the next.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass, field

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from app.keys import Keys
from app.metrics import RECEIVED, REJECTED

INTERVAL = 900
WINDOW = 86_400
KEEP = 2 * WINDOW
FLUSH_EVERY = 5.0
FIELDS = ("accepted", "duplicate", "rejected", "done", "dead")
# The workers' outcome counters, and the interval count each one adds to.
OUTCOMES = {"done": "done", "ignored": "done", "stale": "done", "dead_lettered": "dead"}


def interval_of(timestamp: float) -> int:
    return int(timestamp // INTERVAL * INTERVAL)


def timeline_key(prefix: str, source: str, interval: int) -> str:
    return Keys(prefix, "").timeline(source, interval)


# KEYS: the workers' counters, what was last seen of them, the interval's hash.
# ARGV: the interval's lifetime; what to do when nothing was seen yet: `zero` (count all,
# the counters are new), `baseline` (only note them: they hold history from before this
# version), `skip` (leave the choice to a receiver); then pairs (counter, interval field).
# Nothing is written before the workers' counters exist.
SAMPLE_OUTCOMES = """
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
if redis.call('EXISTS', KEYS[2]) == 0 and ARGV[2] == 'skip' then
  return 0
end
for i = 3, #ARGV, 2 do
  local now = tonumber(redis.call('HGET', KEYS[1], ARGV[i]) or '0')
  local seen = redis.call('HGET', KEYS[2], ARGV[i])
  if not seen and ARGV[2] == 'zero' then
    seen = '0'
  end
  if seen and now > tonumber(seen) then
    redis.call('HINCRBY', KEYS[3], ARGV[i + 1], now - tonumber(seen))
    redis.call('EXPIRE', KEYS[3], ARGV[1])
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
    keys.append(timeline_key(prefix, source, interval_of(now)))
    pairs: list[str | int] = [item for pair in OUTCOMES.items() for item in pair]
    return keys, [KEEP, first, *pairs]


@dataclass
class ReceiverCounts:
    """This process's answers, as counted by prometheus-client, less what was flushed."""

    sources: frozenset[str]
    flushed: dict[tuple[str, str], float] = field(default_factory=dict)
    # Sources whose workers' counters did not exist when this process started: when they
    # appear, everything in them is new. Counters that predate it are only noted.
    fresh: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.flushed = self.totals()  # what happened before this app started is not its own

    def totals(self) -> dict[tuple[str, str], float]:
        totals: dict[tuple[str, str], float] = {}
        for metric, field_of in ((RECEIVED, "outcome"), (REJECTED, None)):
            for family in metric.collect():
                for sample in family.samples:
                    source = sample.labels.get("source", "")
                    if not sample.name.endswith("_total") or source not in self.sources:
                        continue
                    name = sample.labels[field_of] if field_of else "rejected"
                    if name in FIELDS:
                        key = (source, name)
                        totals[key] = totals.get(key, 0.0) + sample.value
        return totals

    def pending(self) -> dict[tuple[str, str], int]:
        totals = self.totals()
        grown = {key: int(value - self.flushed.get(key, 0.0)) for key, value in totals.items()}
        return {key: count for key, count in grown.items() if count > 0}

    def commit(self, flushed: dict[tuple[str, str], int]) -> None:
        for key, count in flushed.items():
            self.flushed[key] = self.flushed.get(key, 0.0) + count


async def note_fresh(redis: aioredis.Redis, prefix: str, counts: ReceiverCounts) -> None:
    """Which sources have no workers' counters yet (read only: a receiver that only ever
    refuses requests writes nothing but their count)."""
    names = sorted(counts.sources)
    async with redis.pipeline(transaction=False) as pipe:
        for source in names:
            pipe.exists(Keys(prefix, "").stats(source))
        found = await pipe.execute()
    counts.fresh = {source for source, exists in zip(names, found, strict=True) if not exists}


async def flush(redis: aioredis.Redis, prefix: str, counts: ReceiverCounts) -> None:
    """One round trip: this process's answers since the last flush, and the workers'
    outcomes since anyone last sampled them."""
    now = time.time()
    pending = counts.pending()
    async with redis.pipeline(transaction=False) as pipe:
        for (source, name), count in pending.items():
            key = timeline_key(prefix, source, interval_of(now))
            pipe.hincrby(key, name, count)
            pipe.expire(key, KEEP)
        for source in sorted(counts.sources):
            first = "zero" if source in counts.fresh else "baseline"
            keys, args = sample_call(prefix, source, now, first)
            pipe.eval(SAMPLE_OUTCOMES, len(keys), *keys, *args)
        await pipe.execute()
    counts.commit(pending)


async def _quietly(work: Awaitable[None], wait: float) -> None:
    """A Redis that is away only delays the counts: what was not flushed goes next time."""
    with contextlib.suppress(RedisError, TimeoutError):
        async with asyncio.timeout(wait):
            await work


async def start_timeline(
    redis: aioredis.Redis, prefix: str, sources: Iterable[str]
) -> asyncio.Task[None]:
    """Note which workers' counters are new, then flush every FLUSH_EVERY seconds until
    the task is cancelled, and once more then."""
    counts = ReceiverCounts(frozenset(sources))
    await _quietly(note_fresh(redis, prefix, counts), wait=1.0)  # never holds startup long

    async def run() -> None:
        try:
            while True:
                await asyncio.sleep(FLUSH_EVERY)
                await _quietly(flush(redis, prefix, counts), wait=FLUSH_EVERY)
        finally:
            with contextlib.suppress(RedisError, TimeoutError, asyncio.CancelledError):
                async with asyncio.timeout(1):
                    await flush(redis, prefix, counts)

    return asyncio.create_task(run())
