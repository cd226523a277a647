"""What settling a batch writes: what each job's end means for RQ and for us.

Successes are written the way RQ writes them, grouped per batch (`batch.settle_successes`);
failures go through RQ's own failure handling, job by job (retried, or to the failed
registry: our dead letters); jobs never started go back to the head of the queue. Our
meta rides in RQ's writes, the ledger record gets the event's state (and, once settled,
its payload), and the outcome counters are added once per batch. Every write is queued on
one `Program` (RQ's methods take it as their pipeline), sent as one command in the
settlement's transaction (`settlement.py`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from rq.job import Job

from app.jobstate import SUCCESS, EventStatus, JobMeta, Outcome, UnreadableJob
from app.keys import Keys
from workers.runtime import batch as batches
from workers.runtime.batch import Batch, Entry, Fate
from workers.runtime.outcomes import (
    attempt_error,
    conclude,
    count_by_type,
    read_event,
    record_end,
    settle,
)
from workers.runtime.program import Program
from workers.runtime.retries import retry_delay
from workers.runtime.rq_worker import RQWorker


@dataclass(frozen=True, slots=True)
class Logged:
    job: Job
    meta: JobMeta | None  # None: not an event's job
    status: EventStatus
    error: str = ""
    delay: int | None = None
    retries_left: int | None = None  # a retry's, as this settlement left it

    def written_by_this(self, stored: dict[str, Any] | None) -> bool:
        """Whether `stored`, the job's meta as Redis holds it now, is the one this
        settlement wrote: its attempt's end, stamped with this settlement's time when the
        event ended (done or dead), with the attempt's error when it is retried."""
        return self.meta is not None and stored == self.meta.to_meta()


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


def queue_settlement(
    program: Program, worker: RQWorker, batch: Batch, held: list[Entry]
) -> list[Logged]:
    """The settlement of the jobs nobody else settled, queued on `program`."""
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
            batches.fail_execution(program, worker, batch, entry)
            logged.append(Logged(job, None, EventStatus.DEAD, str(exc)))
            continue
        raw = call.raw
        if entry.fate is Fate.SUCCEEDED:
            status = meta.state if meta.state in SUCCESS else EventStatus.DONE
            conclude(meta, status)
            job.meta = meta.to_meta()  # saved with RQ's own write of the job
            record_end(program, job, meta, None, raw)
            counts[(meta.prefix, job.origin, meta.source, Outcome(str(status)))] += 1
            by_type[(meta.prefix, job.origin, meta.source, meta.type, Outcome(str(status)))] += 1
            successes.append(entry)
            logged.append(Logged(job, meta, status))
            continue
        logged.append(settle_failure(program, worker, batch, entry, meta, raw))
    batches.settle_successes(program, worker, batch, successes)
    # Every event's meta names its prefix (WEBHOOK_KEY_PREFIX, never empty): a meta without
    # one is an UnreadableJob, failed above.
    for (prefix, origin, source, outcome), count in counts.items():
        program.hincrby(Keys(prefix, origin).stats(source), str(outcome), count)
    for (prefix, origin, source, kind, outcome), count in by_type.items():
        count_by_type(program, Keys(prefix, origin), source, kind, outcome, count)
    batches.put_back(program, worker, batch, [e for e in held if e.fate is Fate.NOT_STARTED])
    return logged


def settle_failure(
    program: Program, worker: RQWorker, batch: Batch, entry: Entry, meta: JobMeta, raw: bytes
) -> Logged:
    job = entry.job
    delay, error = retry_delay(job), attempt_error(meta, entry.exc_string)
    if batches.fail_execution(program, worker, batch, entry):
        settle(program, job, meta, EventStatus.RETRYING, Outcome.RETRIED, error)
        return Logged(job, meta, EventStatus.RETRYING, error, delay, job.retries_left)
    settle(program, job, meta, EventStatus.DEAD, Outcome.DEAD_LETTERED, error, raw)
    return Logged(job, meta, EventStatus.DEAD, error)
