"""Every Redis key the product names, in one place.

The receiver's own keys live under the configured prefix. RQ's keys (`rq:job:<id>`,
`rq:queue:<name>`) are RQ's to name; the helpers here only reproduce them where the claim
script must touch them in the same atomic step, and a test checks they match RQ's.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

# RQ's own prefix (its RQ_KEY_PREFIX) on one Redis. On a cluster each shard's RQ keys are
# under `<shard tag>:rq` (`Keys.sharded`), and a worker process serves one such prefix.
RQ_PREFIX = "rq"
RQ_QUEUES_SET = "rq:queues"
# RQ's prefixes of keys named after a run of a job: `rq:execution:<job id>:<execution id>`
# (a hash, its `worker_name` field naming the worker), and `rq:worker:<name>:executions`.
RQ_EXECUTION_PREFIX = "rq:execution:"
RQ_WORKER_PREFIX = "rq:worker:"


def rq_prefix(tag: str | None) -> str:
    """RQ's key prefix: its own on one Redis, under a shard's hash tag on a cluster."""
    return RQ_PREFIX if tag is None else f"{tag}:{RQ_PREFIX}"


def job_id_for(source: str, event_id: str) -> str:
    """A deterministic RQ job id for one event of one source.

    RQ accepts only `[A-Za-z0-9_-]` in job ids, and providers' ids may hold `.`, `:`, `/`
    or anything else; a hash keeps every id valid and the source prefix keeps two
    providers' ids from colliding.
    """
    digest = hashlib.blake2b(event_id.encode(), digest_size=16).hexdigest()
    return f"{source}-{digest}"


@dataclass(frozen=True, slots=True)
class Keys:
    prefix: str
    queue_name: str
    rq: str = RQ_PREFIX  # RQ's key prefix

    def sharded(self, tag: str) -> Keys:
        """The keys of one shard of a cluster (`app/shards.py`): ours and RQ's, each starting
        with the shard's hash tag, so that one event's keys are in one slot."""
        return Keys(f"{tag}:{self.prefix}", self.queue_name, rq_prefix(tag))

    @property
    def queues(self) -> str:
        """RQ's set of its queues' keys."""
        return f"{self.rq}:queues"

    @property
    def execution_prefix(self) -> str:
        return f"{self.rq}:execution:"

    @property
    def worker_prefix(self) -> str:
        return f"{self.rq}:worker:"

    def seen(self, source: str, event_id: str) -> str:
        return f"{self.prefix}:seen:{source}:{event_id}"

    def seen_signed(self, source: str, digest: str) -> str:
        """The dedupe key of a request's signed bytes, for providers whose id is unsigned."""
        return f"{self.prefix}:seen-signed:{source}:{digest}"

    def event(self, source: str, event_id: str) -> str:
        """The ledger record of one event (a hash)."""
        return f"{self.prefix}:event:{source}:{event_id}"

    @property
    def events(self) -> str:
        """The ledger's index: event record keys scored by receipt time."""
        return f"{self.prefix}:events"

    def requeued(self, token: str) -> str:
        """The events one bulk requeue of the Events page put back: their record keys scored
        by receipt time, as in `events`, so the page's search can walk it the same way."""
        return f"{self.prefix}:requeued:{token}"

    def stats(self, source: str) -> str:
        """Counters of the workers' outcomes for one source (a hash)."""
        return f"{self.prefix}:stats:{source}"

    def type_stats(self, source: str) -> str:
        """The workers' outcomes of one source by event type (a hash: `<outcome>:<type>`)."""
        return f"{self.prefix}:type-stats:{source}"

    def types(self, source: str) -> str:
        """The event types `type_stats` counts on their own (a set, capped: `type_stats.py`)."""
        return f"{self.prefix}:types:{source}"

    @property
    def last_accepted(self) -> str:
        """When each source last had an event accepted (a hash of Unix times), so that a
        restarted receiver's `webhooks_last_accepted_timestamp_seconds` starts from it."""
        return f"{self.prefix}:last-accepted"

    def timeline(self, source: str, interval: int) -> str:
        """One source's counts for one 15-minute interval (a hash), for the Events page."""
        return f"{self.prefix}:timeline:{source}:{interval}"

    def timeline_seen(self, source: str) -> str:
        """The workers' counters of one source, as the timeline last sampled them."""
        return f"{self.prefix}:timeline-seen:{source}"

    def version(self, source: str, entity: str) -> str:
        """The newest applied version of one entity (version guard)."""
        return f"{self.prefix}:version:{source}:{entity}"

    @property
    def scheduled(self) -> str:
        return f"{self.rq}:scheduled:{self.queue_name}"

    @property
    def failed(self) -> str:
        return f"{self.rq}:failed:{self.queue_name}"

    @property
    def finished(self) -> str:
        return f"{self.rq}:finished:{self.queue_name}"

    @property
    def canceled(self) -> str:
        return f"{self.rq}:canceled:{self.queue_name}"

    @property
    def queue(self) -> str:
        return f"{self.rq}:queue:{self.queue_name}"

    @property
    def workers(self) -> str:
        """RQ's set of the keys of the workers registered on the queue."""
        return f"{self.rq}:workers:{self.queue_name}"

    @property
    def scheduler_lock(self) -> str:
        """Held (with a 61 s expiry, refreshed every second) by the queue's live scheduler."""
        return f"{self.rq}:scheduler-lock:{self.queue_name}"

    @property
    def started(self) -> str:
        """RQ's started registry (members `<job id>:<execution id>`)."""
        return f"{self.rq}:wip:{self.queue_name}"

    def job(self, job_id: str) -> str:
        return f"{self.rq}:job:{job_id}"

    def results(self, job_id: str) -> str:
        """RQ's results of one job (a stream)."""
        return f"{self.rq}:results:{job_id}"

    def executions(self, job_id: str) -> str:
        """RQ's executions of one job (a sorted set of execution ids)."""
        return f"{self.rq}:executions:{job_id}"

    def dependents(self, job_id: str) -> str:
        return f"{self.rq}:job:{job_id}:dependents"

    def dependencies(self, job_id: str) -> str:
        """RQ's name, with its two colons."""
        return f"{self.rq}:job::{job_id}:dependencies"
