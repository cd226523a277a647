"""`GET /metrics`: what an on-call engineer alerts on, in Prometheus text format.

Two kinds of figures:
- the receiver's own, per process (answers by outcome and reason, acknowledgement latency,
  time of the last accepted event per source): prometheus-client metrics, aggregated over
  the processes of a host when PROMETHEUS_MULTIPROC_DIR is set (uvicorn --workers N);
- the pipeline's, read from Redis at scrape time, so they are the same whichever receiver
  is scraped and include what the workers did wherever they run: queue depth, scheduled
  retries, dead letters, age of the oldest queued event, and the workers' outcomes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import redis.asyncio as aioredis
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import REGISTRY, Collector
from rq.utils import utcparse

from app.formats import text
from app.jobstate import Outcome
from app.keys import Keys

RECEIVED = Counter(
    "webhooks_received_total",
    "Verified deliveries, by source and outcome (accepted, duplicate).",
    ["source", "outcome"],
)
REJECTED = Counter(
    "webhooks_rejected_total",
    "Refused deliveries, by source and reason (invalid_signature, ...).",
    ["source", "reason"],
)
CONNECTIONS_CUT = Counter(
    "webhooks_connections_cut_total",
    "Connections the HTTP guard refused or closed, by reason (header_timeout, ...).",
    ["reason"],
)
ACK_SECONDS = Histogram(
    "webhooks_ack_seconds",
    "Time from request to acknowledgement of verified deliveries.",
    ["source"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
)
LAST_ACCEPTED = Gauge(
    "webhooks_last_accepted_timestamp_seconds",
    "Unix time of the last accepted event, by source: alert when it stalls.",
    ["source"],
    multiprocess_mode="max",
)


@dataclass
class PipelineSnapshot:
    """What Redis says at scrape time."""

    queued: int = 0
    scheduled: int = 0
    dead: int = 0
    oldest_queued_age: float = 0.0
    outcomes: dict[str, dict[str, int]] = field(default_factory=dict)


async def read_snapshot(
    redis: aioredis.Redis, keys: Keys, sources: Iterable[str]
) -> PipelineSnapshot:
    names = list(sources)
    async with redis.pipeline(transaction=False) as pipe:
        pipe.llen(keys.queue)
        pipe.zcard(keys.scheduled)
        pipe.zcard(keys.failed)
        pipe.lindex(keys.queue, 0)
        for name in names:
            pipe.hgetall(keys.stats(name))
        queued, scheduled, dead, oldest, *stats = await pipe.execute()
    age = 0.0
    if oldest:
        enqueued = await redis.hget(keys.job(text(oldest)), "enqueued_at")
        if enqueued:
            age = max(0.0, time.time() - utcparse(text(enqueued)).timestamp())
    outcomes = {
        name: {text(k): int(v) for k, v in counts.items()}
        for name, counts in zip(names, stats, strict=True)
    }
    return PipelineSnapshot(int(queued), int(scheduled), int(dead), age, outcomes)


class _SnapshotCollector(Collector):
    def __init__(self, snapshot: PipelineSnapshot) -> None:
        self.snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        s = self.snapshot
        for name, value, description in (
            ("webhooks_queue_depth", s.queued, "Events waiting for a worker."),
            ("webhooks_scheduled_retries", s.scheduled, "Events waiting for a retry."),
            ("webhooks_dead_letters", s.dead, "Events in the dead-letter store."),
            (
                "webhooks_oldest_queued_age_seconds",
                s.oldest_queued_age,
                "Age of the event at the head of the queue: alert when workers fall behind.",
            ),
        ):
            yield GaugeMetricFamily(name, description, value=value)
        settled = CounterMetricFamily(
            "webhooks_worker_outcomes",
            "What the workers did, by source and outcome (from Redis: the same on every receiver).",
            labels=["source", "outcome"],
        )
        for source, counts in sorted(s.outcomes.items()):
            for outcome in Outcome:
                settled.add_metric([source, str(outcome)], counts.get(outcome, 0))
        yield settled


def render(snapshot: PipelineSnapshot) -> bytes:
    registry = CollectorRegistry()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        process_metrics = registry
    else:
        process_metrics = REGISTRY
    pipeline_registry = CollectorRegistry()
    pipeline_registry.register(_SnapshotCollector(snapshot))
    return generate_latest(process_metrics) + generate_latest(pipeline_registry)
