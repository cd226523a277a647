"""The picture of every shard on the dashboard's front: the Events page's chart and its line
of the queue now, each shard's read as one Redis's is (`events_page/picture.py`), summed.

The receivers count what they answered in the first shard's timeline; each shard's timeline
holds what its workers did (sampled by the receivers, and by each read here). So the sum of
every shard's is the whole deployment's picture: what was received, once, and what every
shard's workers did. A shard that does not answer is named, and the picture is the others'.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import reduce

from redis import Redis

from app.keys import Keys
from app.settings import Settings
from app.shards import Shards
from workers.ops.events_page.picture import (
    QueueNow,
    Span,
    Timeline,
    added,
    fitting,
    read_queue,
    read_timelines,
)
from workers.ops.shard_reads import read_each


@dataclass(frozen=True, slots=True)
class ShardPicture:
    timelines: dict[Span, Timeline]
    queue: QueueNow


@dataclass
class Picture:
    timeline: Timeline | None  # None: no shard answered (and `queue` counts nothing)
    queue: QueueNow
    down: list[tuple[int, str]] = field(default_factory=list)


def read_picture(settings: Settings, shards: Shards, now: float, span: Span | None) -> Picture:
    """Every shard's counts of `span` (None: the range that fits them all) and queue, summed."""
    sources = list(settings.sources)

    def one(shard: int, client: Redis, keys: Keys) -> ShardPicture:
        timelines = read_timelines(client, keys.prefix, sources, now, span)
        return ShardPicture(timelines, read_queue(client, keys))

    read = read_each(settings, shards, one)
    down = [(shard, got) for shard, got in read.items() if isinstance(got, str)]
    answered = [got for got in read.values() if not isinstance(got, str)]
    if not answered:
        return Picture(None, QueueNow(0, 0.0, 0, 0), down)
    # Summed span by span before the fit: the range must hold every shard's counts.
    summed = {
        s: reduce(added, (got.timelines[s] for got in answered)) for s in answered[0].timelines
    }
    timeline = summed[span] if span is not None else fitting(summed)
    queues = [got.queue for got in answered]
    queue = QueueNow(
        sum(q.queued for q in queues),
        max(q.oldest_age for q in queues),
        sum(q.scheduled for q in queues),
        sum(q.dead for q in queues),
    )
    return Picture(timeline, queue, down)
