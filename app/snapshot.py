"""What Redis says of the pipeline when Prometheus scrapes `/metrics`: one script, one trip.

Read at scrape time, so every receiver reports the same figures, wherever the workers run:
the queue, the retries waiting and those already due, the dead letters, the age of the
oldest queued event, the live workers and whether a scheduler holds the queue's lock, and
the workers' outcome counters (per source, and per source and event type).

A worker counts as live while its key exists without a `death` field: RQ refreshes the key
at every heartbeat (an idle worker of ours beats every few seconds; one running a batch
sets it to last past the batch's timeout), deletes it from the queue's set at a clean stop,
and lets it expire when the worker is killed. The scheduler's lock expires 61 s after its
last heartbeat.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field

import redis.asyncio as aioredis
from rq.utils import utcparse

from app.formats import text
from app.keys import Keys
from app.type_stats import read_counts

# KEYS: queue, scheduled registry, failed registry, the queue's workers set, the scheduler
# lock, then each source's outcome hash and its by-type hash. ARGV: now (Unix seconds),
# RQ's job key prefix (`rq:job:`; a shard's on a cluster).
SNAPSHOT = """
local head = redis.call('LINDEX', KEYS[1], 0)
local enqueued = ''
if head then
  enqueued = redis.call('HGET', ARGV[2] .. head, 'enqueued_at') or ''
end
local live = 0
for _, worker in ipairs(redis.call('SMEMBERS', KEYS[4])) do
  if redis.call('EXISTS', worker) == 1 and redis.call('HEXISTS', worker, 'death') == 0 then
    live = live + 1
  end
end
local found = {
  redis.call('LLEN', KEYS[1]),
  redis.call('ZCARD', KEYS[2]),
  redis.call('ZCOUNT', KEYS[2], '-inf', ARGV[1]),
  redis.call('ZCARD', KEYS[3]),
  enqueued,
  live,
  redis.call('EXISTS', KEYS[5]),
}
for i = 6, #KEYS do
  found[#found + 1] = redis.call('HGETALL', KEYS[i])
end
return found
"""


@dataclass
class PipelineSnapshot:
    queued: int = 0
    scheduled: int = 0
    # Retries whose time has come but that the scheduler has not put back on the queue.
    retries_due: int = 0
    dead: int = 0
    oldest_queued_age: float = 0.0
    workers: int = 0
    scheduler: bool = False
    outcomes: dict[str, dict[str, int]] = field(default_factory=dict)
    # source -> (type, outcome) -> count
    type_outcomes: dict[str, dict[tuple[str, str], int]] = field(default_factory=dict)


def _counts(flat: list[bytes]) -> dict[str, int]:
    return {text(k): int(v) for k, v in zip(flat[::2], flat[1::2], strict=True)}


async def read_snapshot(
    redis: aioredis.Redis, keys: Keys, sources: Iterable[str]
) -> PipelineSnapshot:
    names = list(sources)
    script_keys = [keys.queue, keys.scheduled, keys.failed, keys.workers, keys.scheduler_lock]
    for name in names:
        script_keys += [keys.stats(name), keys.type_stats(name)]
    now = time.time()
    found = await redis.eval(SNAPSHOT, len(script_keys), *script_keys, repr(now), keys.job(""))
    queued, scheduled, due, dead, enqueued, workers, scheduler, *hashes = found
    age = 0.0
    if enqueued:
        age = max(0.0, now - utcparse(text(enqueued)).timestamp())
    return PipelineSnapshot(
        queued=int(queued),
        scheduled=int(scheduled),
        retries_due=int(due),
        dead=int(dead),
        oldest_queued_age=age,
        workers=int(workers),
        scheduler=bool(scheduler),
        outcomes={name: _counts(hashes[2 * i]) for i, name in enumerate(names)},
        type_outcomes={
            name: read_counts(_counts(hashes[2 * i + 1])) for i, name in enumerate(names)
        },
    )
