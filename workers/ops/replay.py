"""Replaying stored events from the ledger (the providers' APIs: `provider_replay.py`).

Deduplication protects against too many deliveries; replay against too few. Everything
goes through the receiver's own claim or enqueue script, so replaying a window twice, or
one that mostly arrived, only enqueues what is missing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from enum import StrEnum

from redis import Redis
from rq import Queue
from rq.executions import ExecutionRegistry

from app.claim import EnqueueArgs, EnqueueKeys, call
from app.event_job import NewJob
from app.intake import SyncIntake
from app.jobstate import EventStatus
from app.providers.base import Delivery
from app.settings import Settings, SourceConfig
from workers.ops.deadletters import DeadLetters
from workers.ops.ledger import EventLedger, LedgerRecord
from workers.ops.replay_counts import Counts
from workers.ops.reruns import How, Rerun
from workers.runtime.outcomes import UPDATE_IF_PRESENT

__all__ = ["LedgerReplay", "Replayed", "replay_ledger"]


class Replayed(StrEnum):
    """What replaying one stored event did."""

    REQUEUED = "requeued"  # a dead letter, back on the queue with a full budget
    PENDING = "pending"  # still queued, running or retrying: left alone
    ENQUEUED = "enqueued"  # its job was gone: enqueued again from the stored payload
    # Its job is gone and its record holds no payload: nothing to run (not an empty body).
    NO_PAYLOAD = "no_payload"
    # Settled before the worker kept each handler's state: which of its handlers ran is
    # unknown, so only a replay of every handler (`all_handlers`) runs it again.
    UNTRACKED = "untracked"


class LedgerReplay:
    """Re-runs stored events one at a time: the command's `replay ledger` and the Events
    page's Replay button do the same thing."""

    def __init__(
        self, settings: Settings, redis: Redis, by: str = "command", all_handlers: bool = False
    ) -> None:
        """With `all_handlers`, every handler runs again; without, only those that have
        not succeeded for the event (the record says which did)."""
        self.by = by
        self.all_handlers = all_handlers
        self.keys = settings.keys
        self.redis = redis
        self.ledger = EventLedger(self.keys, redis)
        self.dead = DeadLetters(settings, redis)
        self.intake = SyncIntake(settings, redis)
        self.queue = Queue(settings.webhook_queue, connection=redis)

    def replay(self, source: SourceConfig, record: LedgerRecord) -> Replayed:
        if self.dead.requeue(record.job_id, self.by, self.all_handlers, How.REPLAY):
            return Replayed.REQUEUED
        # Whether it is still pending is for the enqueue script to say, atomically: the
        # record was read earlier (`replay ledger` reads its whole window first).
        full = self.ledger.get(source.name, record.id)
        if full is None or full.payload is None:
            return Replayed.NO_PAYLOAD  # an empty body would only fail, as a new dead letter
        if not self.all_handlers and _untracked(full):
            return Replayed.UNTRACKED
        delivery = Delivery(
            event_id=record.id,
            event_type=record.type,
            headers={"x-webhook-replayed-from": "ledger"},
            payload_format=full.payload_format,
        )
        job = self.intake.new_job(source, delivery, full.payload, record.received_at)
        if not self.all_handlers:
            done = {name: str(state) for name, state in full.handlers.items() if state.succeeded}
            job.meta.handlers = done
        # Its attempts go on counting from the record's: a count restarted at 1 would write
        # its attempts over the record's first ones (`run:<n>`), and show attempt 1 twice.
        job.meta.attempts = job.meta.budget_start = full.attempts
        # Its attempt starts a trace of its own, linked to the delivery's (tracing on).
        job.meta.trace_link = full.trace
        return Replayed.ENQUEUED if self._enqueue(job) else Replayed.PENDING

    def _enqueue(self, job: NewJob) -> bool:
        """Enqueue the event again and mark its record queued, unless its job is still
        queued, taken, running or waiting for a retry: the script decides that, atomically."""
        keys = EnqueueKeys(
            job_key=self.keys.job(job.job_id),
            queue_key=self.queue.key,
            queues_key=self.keys.queues,
            event_key=self.keys.event(job.call.source, job.call.event_id),
            intermediate_key=self.queue.intermediate_queue_key,
            started_key=self.queue.started_job_registry.key,
            scheduled_key=self.queue.scheduled_job_registry.key,
            executions_key=ExecutionRegistry(job.job_id, connection=self.redis).key,
        )
        fields = self.intake.job_hash.fields(job.call.args(), job.meta.to_meta(), job.description)
        names, args = call(keys, EnqueueArgs(job.job_id, replay=1))
        if not self.intake.enqueue_script(keys=names, args=[*args, *fields]):
            return False
        # The replay, among the event's attempts (`reruns.py`); its record is only updated.
        rerun = Rerun(job.meta.attempts, time.time(), How.REPLAY, self.by, self.all_handlers)
        written = [item for pair in rerun.written().items() for item in pair]
        self.redis.eval(UPDATE_IF_PRESENT, 1, keys.event_key, *written)
        return True


def _untracked(record: LedgerRecord) -> bool:
    """Settled by its handlers before records kept their states (an older worker): its
    replay would run every handler again, those that succeeded too."""
    succeeded = record.status in (EventStatus.DONE, EventStatus.STALE)
    return succeeded and not record.handlers and not record.attempt_log


def replay_ledger(
    settings: Settings,
    source: SourceConfig,
    redis: Redis,
    since: float,
    until: float | None,
    status: EventStatus | None,
    progress: Callable[[Counts], None],
    all_handlers: bool = False,
) -> Counts:
    """Re-run stored events: dead letters are requeued with a full budget; events whose job
    is gone are enqueued again from the stored payload; pending ones are left alone; those
    whose payload is stored nowhere are counted apart (neither new nor already had). Each
    reruns only its handlers that have not succeeded, unless `all_handlers`."""
    replayer = LedgerReplay(settings, redis, all_handlers=all_handlers)
    counts = Counts(
        extra={"requeued": 0, "enqueued": 0, "pending": 0, "no_payload": 0, "untracked": 0}
    )
    for record in replayer.ledger.find(source.name, status, since, until):
        counts.fetched += 1
        done = replayer.replay(source, record)
        counts.extra[str(done)] += 1
        if done is Replayed.PENDING:
            counts.already_had += 1
        elif done not in (Replayed.NO_PAYLOAD, Replayed.UNTRACKED):
            counts.new += 1
        progress(counts)
    return counts
