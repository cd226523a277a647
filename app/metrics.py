"""`GET /metrics`: what an on-call engineer alerts on, in Prometheus text format.

Two kinds of figures:
- the receiver's own, per process (answers by outcome and reason, acknowledgement latency,
  time of the last accepted event per source): prometheus-client metrics, aggregated over
  the processes of a host when PROMETHEUS_MULTIPROC_DIR is set (uvicorn --workers N);
- the pipeline's, read from Redis at scrape time (`snapshot.py`), so they are the same
  whichever receiver is scraped and include what the workers did wherever they run: queue
  depth, scheduled and due retries, dead letters, age of the oldest queued event, live
  workers, the scheduler, and the workers' outcomes. When Redis cannot be read, the
  receiver's own figures are served all the same (its 503s are what an outage shows), with
  `webhooks_redis_up 0`. On a cluster each shard's series carry its `shard` label (and a
  shard that could not be read, `webhooks_redis_up{shard="3"} 0`): counters per shard do
  not jump back when a shard misses a scrape, and an alert can name its shard.
And each source's expected silence (a setting), which the silence alert compares against.
The alert rules that read them: deploy/prometheus/webhook-alerts.yml.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import REGISTRY, Collector

from app.errors import InternalError, InvalidSignature, QueueUnavailable, ReplicasBehind
from app.jobstate import Outcome
from app.keyfetch import KeyUnavailable
from app.snapshot import PipelineSnapshot
from app.type_stats import OTHER, TYPES_PER_SOURCE

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


@dataclass(frozen=True, slots=True)
class SourceSeries:
    accepted: Any
    duplicate: Any
    ack_seconds: Any
    last_accepted: Any

    @staticmethod
    def of(source: str) -> SourceSeries:
        # The refusals the alert rules count start at 0: Prometheus's increase() cannot see
        # the first count of a series that appears with it.
        for error in (InvalidSignature, QueueUnavailable, ReplicasBehind, KeyUnavailable):
            REJECTED.labels(source, error.reason)
        REJECTED.labels(source, InternalError.reason)
        return SourceSeries(
            RECEIVED.labels(source, "accepted"),
            RECEIVED.labels(source, "duplicate"),
            ACK_SECONDS.labels(source),
            LAST_ACCEPTED.labels(source),
        )


@dataclass(frozen=True, slots=True)
class ShardFigures:
    """What one scrape read of one shard: None when it could not be read. `shard` is None on
    one Redis, whose series carry no `shard` label (the rules and the Grafana dashboard read
    both: `deploy/prometheus/`, `deploy/grafana/`)."""

    shard: int | None
    snapshot: PipelineSnapshot | None


class _SnapshotCollector(Collector):
    def __init__(self, shards: Sequence[ShardFigures], silences: Mapping[str, int]) -> None:
        self.shards = shards
        self.silences = silences
        self.labels = ["shard"] if any(f.shard is not None for f in shards) else []

    def _at(self, figures: ShardFigures) -> list[str]:
        return [str(figures.shard)] if self.labels else []

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "webhooks_redis_up",
            "1 when this scrape read the pipeline's figures from Redis (on a cluster, from the "
            "shard), 0 when it could not (they are then left out; the receiver's own are still "
            "served).",
            labels=self.labels,
        )
        for figures in self.shards:
            up.add_metric(self._at(figures), int(figures.snapshot is not None))
        yield up
        silence = GaugeMetricFamily(
            "webhooks_source_expected_silence_seconds",
            "WEBHOOK_EXPECTED_SILENCE(_<NAME>): how long a source may go without an accepted "
            "event before the silence alert fires (0: never).",
            labels=["source"],
        )
        for source, seconds in sorted(self.silences.items()):
            silence.add_metric([source], seconds)
        yield silence
        read = [(self._at(f), f.snapshot) for f in self.shards if f.snapshot is not None]
        if read:
            yield from _pipeline(read, self.labels)


def _pipeline(read: list[tuple[list[str], PipelineSnapshot]], shard: list[str]) -> Iterator[Metric]:
    for name, value_of, description in GAUGES:
        gauge = GaugeMetricFamily(name, description, labels=shard)
        for at, snapshot in read:
            gauge.add_metric(at, value_of(snapshot))
        yield gauge
    settled = CounterMetricFamily(
        "webhooks_worker_outcomes",
        "What the workers did, by source and outcome (from Redis: the same on every receiver).",
        labels=["source", "outcome", *shard],
    )
    by_type = CounterMetricFamily(
        "webhooks_worker_type_outcomes",
        "What the workers did, by source, event type and outcome (a source's first "
        f"{TYPES_PER_SOURCE} types by name, later ones as {OTHER}).",
        labels=["source", "type", "outcome", *shard],
    )
    for at, s in read:
        for source, counts in sorted(s.outcomes.items()):
            for outcome in Outcome:
                settled.add_metric([source, str(outcome), *at], counts.get(outcome, 0))
        for source, type_counts in sorted(s.type_outcomes.items()):
            # Every outcome of a type once it is seen: a counter's first count is invisible
            # to increase() when its series appears with it (the first dead letter of a type).
            for kind in sorted({kind for kind, _ in type_counts}):
                for outcome in Outcome:
                    count = type_counts.get((kind, outcome), 0)
                    by_type.add_metric([source, kind, str(outcome), *at], count)
    yield settled
    yield by_type


GAUGES: tuple[tuple[str, Callable[[PipelineSnapshot], float], str], ...] = (
    ("webhooks_queue_depth", lambda s: s.queued, "Events waiting for a worker."),
    ("webhooks_scheduled_retries", lambda s: s.scheduled, "Events waiting for a retry."),
    (
        "webhooks_retries_due",
        lambda s: s.retries_due,
        "Retries whose time has come, not yet put back on the queue by the scheduler.",
    ),
    ("webhooks_dead_letters", lambda s: s.dead, "Events in the dead-letter store."),
    (
        "webhooks_oldest_queued_age_seconds",
        lambda s: s.oldest_queued_age,
        "Age of the event at the head of the queue: alert when workers fall behind.",
    ),
    ("webhooks_workers", lambda s: s.workers, "Live workers registered on the queue."),
    (
        "webhooks_scheduler_up",
        lambda s: int(s.scheduler),
        "1 when a scheduler holds the queue's lock (it puts due retries back on the queue).",
    ),
)


def render(shards: Sequence[ShardFigures], silences: Mapping[str, int]) -> bytes:
    """The receiver's figures, then the pipeline's (of each shard on a cluster, labelled
    with it) and each source's expected silence."""
    registry = CollectorRegistry()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        process_metrics = registry
    else:
        process_metrics = REGISTRY
    pipeline_registry = CollectorRegistry()
    pipeline_registry.register(_SnapshotCollector(shards, silences))
    return generate_latest(process_metrics) + generate_latest(pipeline_registry)
