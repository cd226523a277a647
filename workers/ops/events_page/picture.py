"""The Events page's picture: the counts per source over a range of time, and the queue now.

Counts come from `app/timeline.py`: the hour from the 1-minute counters (60 bars), the day
from the 15-minute counters (96 bars), the week from the same 15-minute counters summed by
the hour in Redis (168 bars, so the reply stays small). Read in one round trip whatever the
volume. The workers' outcomes are sampled first, so the page is current to the second for
done, retried and dead even between the receivers' flushes. With no range asked for
(`auto`), all three are read and the smallest that holds every count of the week is shown.
Not a transaction, which would hold Redis (and every receiver) for the whole read: the hour
is read first, so a flush landing between the reads only adds to the larger ranges, and at
worst that view shows a larger range than it needs, never one that leaves counts out.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import cast

from redis import Redis
from rq.utils import utcparse

from app.formats import text
from app.keys import Keys
from app.timeline import (
    FIELDS,
    INTERVAL,
    MINUTE,
    SAMPLE_OUTCOMES,
    minute_key,
    sample_call,
    timeline_key,
)

# KEYS: the buckets' hashes, oldest first; ARGV[1]: how many buckets make one bar; then the
# fields. Returns each bar's sums, field by field, bar after bar: the week's 672 hashes per
# source come back as 168 bars.
SUM_BARS = """
local group, fields = tonumber(ARGV[1]), #ARGV - 1
local out = {}
for bar = 0, #KEYS / group - 1 do
  local sums = {}
  for f = 1, fields do sums[f] = 0 end
  for k = 1, group do
    local row = redis.call('HMGET', KEYS[bar * group + k], unpack(ARGV, 2))
    for f = 1, fields do sums[f] = sums[f] + (tonumber(row[f]) or 0) end
  end
  for f = 1, fields do out[#out + 1] = sums[f] end
end
return out
"""


class Span(StrEnum):
    HOUR = "hour"
    DAY = "day"
    WEEK = "week"


@dataclass(frozen=True, slots=True)
class Window:
    span: Span
    step: int  # seconds per bar
    bars: int

    def starts(self, now: float) -> tuple[int, ...]:
        """Each bar's start, unix seconds, oldest first; the last holds `now`."""
        current = int(now // self.step * self.step)
        return tuple(current - self.step * (self.bars - 1 - i) for i in range(self.bars))

    def bucket_keys(self, prefix: str, source: str, starts: tuple[int, ...]) -> list[str]:
        if self.step == MINUTE:
            return [minute_key(prefix, source, start) for start in starts]
        quarters = self.step // INTERVAL
        return [
            timeline_key(prefix, source, start + INTERVAL * q)
            for start in starts
            for q in range(quarters)
        ]


WINDOWS = {
    Span.HOUR: Window(Span.HOUR, MINUTE, 60),
    Span.DAY: Window(Span.DAY, INTERVAL, 96),
    Span.WEEK: Window(Span.WEEK, 3600, 168),
}


@dataclass(frozen=True, slots=True)
class Series:
    name: str  # one of app.timeline.FIELDS
    counts: tuple[int, ...]  # one per bar, oldest first

    @property
    def total(self) -> int:
        return sum(self.counts)


@dataclass(frozen=True, slots=True)
class SourceCounts:
    source: str
    series: tuple[Series, ...]  # in FIELDS' order

    def of(self, name: str) -> Series:
        return next(s for s in self.series if s.name == name)


@dataclass(frozen=True, slots=True)
class Timeline:
    window: Window
    starts: tuple[int, ...]
    sources: tuple[SourceCounts, ...]
    auto: bool  # the range was chosen to fit the data
    now: float

    @property
    def total(self) -> int:
        return sum(s.total for source in self.sources for s in source.series)


@dataclass(frozen=True, slots=True)
class QueueNow:
    queued: int
    oldest_age: float  # seconds the head of the queue has waited
    scheduled: int  # waiting for their next attempt
    dead: int


def fitting(timelines: dict[Span, Timeline]) -> Timeline:
    """The smallest range whose counts are all the week's: a count outside the hour (or
    counted before the minutes were) makes the hour's total fall short of the others'."""
    week = timelines[Span.WEEK].total
    for span in (Span.HOUR, Span.DAY):
        if timelines[span].total >= week:
            return timelines[span]
    return timelines[Span.WEEK]


def read_timeline(
    connection: Redis, prefix: str, sources: list[str], now: float, span: Span | None
) -> Timeline:
    """The counts of `span` (None: the one that fits, see `fitting`)."""
    timelines = read_timelines(connection, prefix, sources, now, span)
    return timelines[span] if span is not None else fitting(timelines)


def read_timelines(
    connection: Redis, prefix: str, sources: list[str], now: float, span: Span | None
) -> dict[Span, Timeline]:
    """The counts of `span`, or (None) of every span, for `fitting` to choose from."""
    spans = [span] if span is not None else [Span.HOUR, Span.DAY, Span.WEEK]
    starts = {s: WINDOWS[s].starts(now) for s in spans}
    with connection.pipeline(transaction=False) as pipe:
        for source in sources:
            # `skip`: only a receiver, which knows whether the counters are new, starts them.
            keys, args = sample_call(prefix, source, now, "skip")
            pipe.eval(SAMPLE_OUTCOMES, len(keys), *keys, *args)
        for s in spans:
            window = WINDOWS[s]
            group = window.step // INTERVAL if window.step != MINUTE else 1
            for source in sources:
                keys = window.bucket_keys(prefix, source, starts[s])
                pipe.eval(SUM_BARS, len(keys), *keys, group, *FIELDS)
        replies = pipe.execute()[len(sources) :]
    timelines: dict[Span, Timeline] = {}
    for n, s in enumerate(spans):
        counted = []
        for m, source in enumerate(sources):
            flat = [int(v) for v in replies[n * len(sources) + m]]
            width = len(FIELDS)
            series = tuple(Series(name, tuple(flat[i::width])) for i, name in enumerate(FIELDS))
            counted.append(SourceCounts(source, series))
        timelines[s] = Timeline(WINDOWS[s], starts[s], tuple(counted), span is None, now)
    return timelines


def added(one: Timeline, other: Timeline) -> Timeline:
    """Two shards' counts of the same span, sources and moment, bar by bar."""
    sources = tuple(
        SourceCounts(
            a.source,
            tuple(
                Series(x.name, tuple(p + q for p, q in zip(x.counts, y.counts, strict=True)))
                for x, y in zip(a.series, b.series, strict=True)
            ),
        )
        for a, b in zip(one.sources, other.sources, strict=True)
    )
    return replace(one, sources=sources)


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
