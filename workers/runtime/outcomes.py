"""What the worker records when an attempt starts or settles: the job's meta, the ledger
record, the outcome counters, and one log line per terminal state.

The writes go on a pipeline the caller sends, so each state change is one round trip. A
ledger record is only updated while it exists: one that outlived WEBHOOK_LEDGER_TTL is not
brought back without its TTL.
"""

from __future__ import annotations

import time
from typing import Any

from redis.client import Pipeline
from rq.job import Job

from app.jobstate import EventStatus, JobMeta, Outcome
from app.keys import Keys
from app.logs import log_state

UPDATE_IF_PRESENT = """
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HSET', KEYS[1], unpack(ARGV))
end
return 0
"""


def meta_of(job: Job) -> JobMeta:
    return JobMeta.from_meta(job.meta)


def save_meta(pipe: Pipeline, job: Job, meta: JobMeta) -> None:
    """`job.save_meta()`, on a pipeline."""
    job.meta = meta.to_meta()
    pipe.hset(job.key, "meta", job.serializer.dumps(job.meta))


def record(
    pipe: Pipeline,
    job: Job,
    meta: JobMeta,
    status: EventStatus,
    outcome: Outcome | None = None,
    **fields: Any,
) -> None:
    """Queue the ledger update and the counter increment of one outcome on `pipe`."""
    if not meta.prefix:
        return  # a job enqueued by something else than the receiver
    keys = Keys(meta.prefix, job.origin)
    values: dict[str, Any] = {"status": str(status), "attempts": meta.attempts, **fields}
    if status.settled:
        values["settled_at"] = time.time()
    args = [item for key, value in values.items() for item in (key, value)]
    # EVAL with the text, not a registered script: in a pipeline, redis-py checks
    # registered scripts with an extra SCRIPT EXISTS round trip on every execute, while
    # Redis caches the compiled script by its text's hash anyway.
    pipe.eval(UPDATE_IF_PRESENT, 1, keys.event(meta.source, meta.event_id), *args)
    if outcome is not None:
        pipe.hincrby(keys.stats(meta.source), str(outcome), 1)


def settle(
    pipe: Pipeline,
    job: Job,
    meta: JobMeta,
    status: EventStatus,
    outcome: Outcome,
    error: str = "",
) -> None:
    """The meta and ledger writes of a settled attempt (done, retrying or dead)."""
    meta.state = status
    if error:
        meta.last_error = error
    if status is EventStatus.DEAD:
        meta.dead_at = time.time()
    elif status.settled:
        meta.settled_at = time.time()
    save_meta(pipe, job, meta)
    record(pipe, job, meta, status, outcome, **({"last_error": error} if error else {}))


def log_outcome(
    job: Job,
    meta: JobMeta,
    status: EventStatus,
    error: str = "",
    delay: int | None = None,
    retries_left: int | None = None,
) -> None:
    """The one JSON line of a terminal state (or of a scheduled retry)."""
    fields: dict[str, Any] = {"job_id": job.id, "attempt": meta.attempts}
    if status is EventStatus.RETRYING:
        left = job.retries_left if retries_left is None else retries_left
        log_state(
            "retry_scheduled", *meta.labels, delay=delay, retries_left=left, error=error, **fields
        )
    elif status is EventStatus.DEAD:
        log_state("dead_lettered", *meta.labels, permanent=meta.permanent, error=error, **fields)
    else:
        log_state(str(status), *meta.labels, **fields)
