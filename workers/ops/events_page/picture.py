"""The Events page's picture: the last day per source, and the queue right now.

The day is read from the 15-minute counters of `app/timeline.py` (96 intervals per source,
one round trip whatever the volume). The workers' outcomes are sampled first, so the page
is current to the second for done and dead even between the receivers' flushes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import cast

from redis import Redis
from rq.utils import utcparse

from app.formats import text
from app.keys import Keys
from app.timeline import (
    FIELDS,
    INTERVAL,
    SAMPLE_OUTCOMES,
    WINDOW,
    interval_of,
    sample_call,
    timeline_key,
)


@dataclass(frozen=True, slots=True)
class Series:
    name: str  # accepted, duplicate, rejected, done, dead
    counts: tuple[int, ...]  # one per interval, oldest first

    @property
    def total(self) -> int:
        return sum(self.counts)

    @property
    def peak(self) -> int:
        return max(self.counts, default=0)


@dataclass(frozen=True, slots=True)
class SourceDay:
    source: str
    series: tuple[Series, ...]


@dataclass(frozen=True, slots=True)
class Day:
    starts: tuple[int, ...]  # each interval's start, unix seconds, oldest first
    sources: tuple[SourceDay, ...]


@dataclass(frozen=True, slots=True)
class QueueNow:
    queued: int
    oldest_age: float  # seconds the head of the queue has waited
    scheduled: int  # waiting for their next attempt
    dead: int


def read_day(connection: Redis, prefix: str, sources: list[str], now: float) -> Day:
    current = interval_of(now)
    count = WINDOW // INTERVAL
    starts = tuple(current - INTERVAL * (count - 1 - i) for i in range(count))
    with connection.pipeline(transaction=False) as pipe:
        for source in sources:
            # `skip`: only a receiver, which knows whether the counters are new, starts them.
            keys, args = sample_call(prefix, source, now, "skip")
            pipe.eval(SAMPLE_OUTCOMES, len(keys), *keys, *args)
        for source in sources:
            for start in starts:
                pipe.hmget(timeline_key(prefix, source, start), *FIELDS)
        replies = pipe.execute()[len(sources) :]
    days = []
    for n, source in enumerate(sources):
        rows = replies[n * count : (n + 1) * count]
        series = tuple(
            Series(name, tuple(int(row[i] or 0) for row in rows)) for i, name in enumerate(FIELDS)
        )
        days.append(SourceDay(source, series))
    return Day(starts, tuple(days))


def read_queue(connection: Redis, keys: Keys) -> QueueNow:
    with connection.pipeline(transaction=False) as pipe:
        pipe.llen(keys.queue)
        pipe.lindex(keys.queue, 0)
        pipe.zcard(keys.scheduled)
        pipe.zcard(keys.failed)
        queued, head, scheduled, dead = pipe.execute()
    age = 0.0
    if head:
        enqueued = cast(bytes | None, connection.hget(keys.job(text(head)), "enqueued_at"))
        if enqueued:
            age = max(0.0, time.time() - utcparse(text(enqueued)).timestamp())
    return QueueNow(int(queued), age, int(scheduled), int(dead))
