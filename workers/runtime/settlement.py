"""Settling a batch: what each job's end means for RQ and for us, in one transaction.

Successes are written the way RQ writes them, grouped per batch (`batch.settle_successes`);
failures go through RQ's own failure handling, job by job (retried, or to the failed
registry: our dead letters); jobs never started go back to the head of the queue. Our
meta rides in RQ's writes, the ledger record gets the event's state (and, once settled,
its payload), and the outcome counters are added once per batch.

A job is settled once, whoever settles it. The worker that ran it and another worker's
recovery may both try (the runner's heartbeats were late, or its settle was slow): the
transaction watches the jobs' hashes, which every settlement writes, and settles only the
jobs whose execution is still in the started registry, which every settlement leaves. The
second one to commit finds its jobs changed, looks again, and leaves them. The same holds
for a settlement made late, after a cut of the worker's link to Redis: a job that another
worker's recovery took back meanwhile is left to it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from redis.client import Pipeline
from redis.exceptions import WatchError
from rq.job import Job

from app.jobstate import SUCCESS, EventStatus, JobMeta, Outcome, UnreadableJob
from app.keys import Keys
from app.logs import logger
from workers.runtime import batch as batches
from workers.runtime.batch import Batch, Entry, Fate
from workers.runtime.outcomes import (
    attempt_error,
    conclude,
    count_by_type,
    log_outcome,
    read_event,
    record_end,
    settle,
)
from workers.runtime.retries import retry_delay
from workers.runtime.rq_worker import RQWorker
from workers.runtime.stream import LINK_ERRORS

# Each attempt after the first follows a settlement by someone else; more than a few in a
# row would mean something rewrites job hashes in a loop.
ATTEMPTS = 5


@dataclass(frozen=True, slots=True)
class Logged:
    job: Job
    meta: JobMeta | None  # None: not an event's job
    status: EventStatus
    error: str = ""
    delay: int | None = None


@dataclass(frozen=True, slots=True)
class JobState:
    """What building the transaction changes on a job object, put back to build it again."""

    retries_left: int | None
    meta: dict[str, Any]
    status: Any

    @classmethod
    def of(cls, job: Job) -> JobState:
        # A shallow copy: building the transaction replaces the meta (`to_meta` makes a new
        # dict each time) and never changes a value inside it, such as its handlers' states.
        return cls(job.retries_left, dict(job.meta), job._status)

    def restore(self, job: Job) -> None:
        job.retries_left, job.meta, job._status = self.retries_left, self.meta, self.status


def settle_batch(worker: RQWorker, batch: Batch) -> list[Entry]:
    """Settle the batch's jobs that nobody else has; returns those it settled."""
    # Every entry has begun (the worker settles only a batch it began; recovery, executions
    # from the started registry), and neither settles an empty batch.
    entries = batch.entries
    states = [JobState.of(e.job) for e in entries]
    for _ in range(ATTEMPTS):
        with worker.connection.pipeline() as pipe:
            try:
                watched = pipe.watch(*[e.job.key for e in entries])  # type: ignore[no-untyped-call]
                held = still_held(pipe, batch, entries, watched)
                pipe.multi()
                logged = queue_settlement(pipe, worker, batch, held)
                pipe.execute()
                break
            except WatchError:
                for entry, state in zip(entries, states, strict=True):
                    state.restore(entry.job)
            except OutOfTurn:
                # Seen once after a cut link (a connection reset mid-reply): WATCH read a
                # reply left on the connection, ZMSCORE read WATCH's. The connection is
                # dropped, never reused, and the settlement tried on a fresh one.
                if pipe.connection is not None:
                    pipe.connection.disconnect()  # type: ignore[no-untyped-call]
                for entry, state in zip(entries, states, strict=True):
                    state.restore(entry.job)
                logger.warning("redis answered out of turn: settling again on a new connection")
            except LINK_ERRORS:
                # The worker tries again once Redis answers: from the jobs as they ended,
                # not as this attempt left them (a retry's budget taken once, not twice).
                for entry, state in zip(entries, states, strict=True):
                    state.restore(entry.job)
                raise
    else:
        raise RuntimeError(f"settling a batch of {len(entries)}: its jobs kept changing")
    settled = {id(entry) for entry in held}
    for entry in entries:
        if id(entry) not in settled:
            worker.executions.pop(entry.execution.id, None)  # type: ignore[union-attr]
            logger.warning(
                "job settled by another worker; not settled again", extra={"job_id": entry.job.id}
            )
    for line in logged:
        if line.meta is None:
            logger.error(
                "a job that is not a webhook event's was moved to the failed registry",
                extra={"job_id": line.job.id, "error": line.error},
            )
        else:
            log_outcome(line.job, line.meta, line.status, line.error, line.delay)
    return held


class OutOfTurn(Exception):
    """A reply that does not answer the command sent: the connection is out of step."""


def still_held(pipe: Pipeline, batch: Batch, entries: list[Entry], watched: Any) -> list[Entry]:
    """The entries whose execution is still in the started registry: nobody settled them.
    `watched` is WATCH's reply, which must have been OK."""
    members = [e.execution.composite_key for e in entries]  # type: ignore[union-attr]
    scores = pipe.zmscore(batch.started.key, members)
    if watched is not True or not isinstance(scores, list) or len(scores) != len(members):
        raise OutOfTurn(f"WATCH answered {type(watched).__name__}, ZMSCORE {type(scores).__name__}")
    return [entry for entry, score in zip(entries, scores, strict=True) if score is not None]


def queue_settlement(
    pipe: Pipeline, worker: RQWorker, batch: Batch, held: list[Entry]
) -> list[Logged]:
    logged: list[Logged] = []
    successes: list[Entry] = []
    counts: Counter[tuple[str, str, str, Outcome]] = Counter()
    by_type: Counter[tuple[str, str, str, str, Outcome]] = Counter()
    for entry in held:
        if entry.fate is Fate.NOT_STARTED:
            continue
        job = entry.job
        job.started_at, job.ended_at = entry.started_at, entry.ended_at
        try:
            meta, call = read_event(job)
        except UnreadableJob as exc:
            job.retries_left = 0  # to the failed registry, through RQ's own failure path
            batches.fail_execution(pipe, worker, batch, entry)
            logged.append(Logged(job, None, EventStatus.DEAD, str(exc)))
            continue
        raw = call.raw
        if entry.fate is Fate.SUCCEEDED:
            status = meta.state if meta.state in SUCCESS else EventStatus.DONE
            conclude(meta, status)
            job.meta = meta.to_meta()  # saved with RQ's own write of the job
            record_end(pipe, job, meta, None, raw)
            counts[(meta.prefix, job.origin, meta.source, Outcome(str(status)))] += 1
            by_type[(meta.prefix, job.origin, meta.source, meta.type, Outcome(str(status)))] += 1
            successes.append(entry)
            logged.append(Logged(job, meta, status))
            continue
        logged.append(settle_failure(pipe, worker, batch, entry, meta, raw))
    batches.settle_successes(pipe, worker, batch, successes)
    # Every event's meta names its prefix (WEBHOOK_KEY_PREFIX, never empty): a meta without
    # one is an UnreadableJob, failed above.
    for (prefix, origin, source, outcome), count in counts.items():
        pipe.hincrby(Keys(prefix, origin).stats(source), str(outcome), count)
    for (prefix, origin, source, kind, outcome), count in by_type.items():
        count_by_type(pipe, Keys(prefix, origin), source, kind, outcome, count)
    batches.put_back(pipe, worker, batch, [e for e in held if e.fate is Fate.NOT_STARTED])
    return logged


def settle_failure(
    pipe: Pipeline, worker: RQWorker, batch: Batch, entry: Entry, meta: JobMeta, raw: bytes
) -> Logged:
    job = entry.job
    delay, error = retry_delay(job), attempt_error(meta, entry.exc_string)
    if batches.fail_execution(pipe, worker, batch, entry):
        settle(pipe, job, meta, EventStatus.RETRYING, Outcome.RETRIED, error)
        return Logged(job, meta, EventStatus.RETRYING, error, delay)
    settle(pipe, job, meta, EventStatus.DEAD, Outcome.DEAD_LETTERED, error, raw)
    return Logged(job, meta, EventStatus.DEAD, error)
