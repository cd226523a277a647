"""Settling a batch: what each job's end means for RQ and for us, in one transaction.

Successes are written the way RQ writes them, grouped per batch (`batch.settle_successes`);
failures go through RQ's own failure handling, job by job (retried, or to the failed
registry: our dead letters); jobs never started go back to the head of the queue. Our
meta rides in RQ's writes, the ledger record gets the event's state (and, once settled,
its payload), and the outcome counters are added once per batch.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from rq.job import Job

from app.jobstate import EventCall, EventStatus, JobMeta, Outcome
from app.keys import Keys
from workers.runtime import batch as batches
from workers.runtime.batch import Batch, Entry, Fate
from workers.runtime.outcomes import conclude, log_outcome, meta_of, record_end, settle
from workers.runtime.retries import last_error, retry_delay

SUCCESS = frozenset({EventStatus.DONE, EventStatus.IGNORED, EventStatus.STALE})
Logged = tuple[Job, JobMeta, EventStatus, str, int | None]


def settle_batch(worker: Any, batch: Batch) -> None:
    logged: list[Logged] = []
    successes: list[Entry] = []
    counts: Counter[tuple[str, str, str, Outcome]] = Counter()
    with worker.connection.pipeline() as pipe:
        for entry in batch.entries:
            if entry.fate is Fate.NOT_STARTED:
                continue
            job, meta = entry.job, meta_of(entry.job)
            job.started_at, job.ended_at = entry.started_at, entry.ended_at
            raw = EventCall.from_args(job.args).raw
            if entry.fate is Fate.SUCCEEDED:
                status = meta.state if meta.state in SUCCESS else EventStatus.DONE
                conclude(meta, status)
                job.meta = meta.to_meta()  # saved with RQ's own write of the job
                record_end(pipe, job, meta, None, raw)
                counts[(meta.prefix, job.origin, meta.source, Outcome(str(status)))] += 1
                successes.append(entry)
                logged.append((job, meta, status, "", None))
                continue
            logged.append(settle_failure(pipe, worker, batch, entry, meta, raw))
        batches.settle_successes(pipe, worker, batch, successes)
        for (prefix, origin, source, outcome), count in counts.items():
            if prefix:
                pipe.hincrby(Keys(prefix, origin).stats(source), str(outcome), count)
        batches.put_back(
            pipe, worker, batch, [e for e in batch.entries if e.fate is Fate.NOT_STARTED]
        )
        pipe.execute()
    for job, meta, status, error, delay in logged:
        log_outcome(job, meta, status, error, delay)


def settle_failure(
    pipe: Any, worker: Any, batch: Batch, entry: Entry, meta: JobMeta, raw: bytes
) -> Logged:
    job = entry.job
    delay, error = retry_delay(job), last_error(entry.exc_string)
    if batches.settle_failure(pipe, worker, batch, entry):
        settle(pipe, job, meta, EventStatus.RETRYING, Outcome.RETRIED, error)
        return job, meta, EventStatus.RETRYING, error, delay
    settle(pipe, job, meta, EventStatus.DEAD, Outcome.DEAD_LETTERED, error, raw)
    return job, meta, EventStatus.DEAD, error, None
