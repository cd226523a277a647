"""Retry budgets: a requeue gives the full budget back, and a dead worker's job is retried.

- RQ's requeue (its CLI, `FailedJobRegistry.requeue`, rq-dashboard's buttons) leaves
  `retries_left` at 0, so a requeued event would get a single attempt. The worker notices
  such a requeue from the job's meta (`JobMeta.budget_spent_elsewhere`) and gives the full
  budget back (`restore_budget`), as `webhooks dead requeue` does up front.
- A job whose worker died mid-attempt (SIGKILL, OOM, a lost machine) is found by another
  worker's maintenance sweep, which calls the job's `on_failure` callback with
  `AbandonedJobError` before it retries the job or moves it to the failed registry.
  `on_failure` records that in the meta, the ledger and the log, and makes the retry
  immediate: the handler never failed, so there is nothing to back off from, and a
  scheduled retry would wait for a scheduler, possibly the one that died with the worker.
"""

from __future__ import annotations

from types import TracebackType

from redis import Redis
from rq.exceptions import AbandonedJobError
from rq.job import Job

from app.jobstate import EventStatus, JobMeta, Outcome, UnreadableJob
from app.settings import Settings
from workers.runtime.outcomes import log_outcome, read_event, settle

ORPHANED = "worker died during the attempt (AbandonedJobError)"


def restore_budget(job: Job, meta: JobMeta, settings: Settings, all_handlers: bool = False) -> None:
    """Give the job the full configured retry budget again, and its handlers that have not
    succeeded (every handler, with `all_handlers`) their turn again (in memory; the caller
    saves)."""
    budget = settings.webhook_max_retries
    job.retries_left = budget if budget else None
    job.retry_intervals = settings.retry_intervals if budget else None
    meta.budget = budget
    meta.budget_start = meta.attempts
    meta.state = EventStatus.QUEUED
    meta.permanent = False
    meta.dead_at = None
    meta.requeues += 1
    meta.forget_failures(all_handlers)
    # Its next attempt starts a trace of its own, linked to this one (tracing on).
    meta.trace_link, meta.trace = meta.trace or meta.trace_link, ""


def on_failure(
    job: Job,
    connection: Redis,
    exc_type: type[BaseException],
    exc: BaseException,
    traceback: TracebackType | None,
) -> None:
    """The job's RQ failure callback. A handler's own failure is the worker's to settle
    (`workers/runtime/worker.py`); only an abandoned attempt is handled here."""
    if not issubclass(exc_type, AbandonedJobError):
        return
    try:
        meta, call = read_event(job)
    except UnreadableJob:
        return  # RQ's sweep fails it; there is no event to account for
    # The same test RQ's sweep makes right after this callback, on the same job object.
    retry = bool(job.retries_left and job.retries_left > 0)
    status = EventStatus.RETRYING if retry else EventStatus.DEAD
    with connection.pipeline(transaction=False) as pipe:
        outcome = Outcome.RETRIED if retry else Outcome.DEAD_LETTERED
        # A dead letter's record gets its payload, as a settled event's does: the ledger
        # and replay keep it after the dead letter is purged.
        payload = None if retry else call.raw
        settle(pipe, job, meta, status, outcome, ORPHANED, payload)
        pipe.execute()
    if retry:
        # `job.retry` enqueues at once when there is no interval. RQ saves the job without
        # the field when it is None, so the stored intervals stay for later failures.
        job.retry_intervals = None
    if retry:  # logged before RQ's retry takes one from the budget
        log_outcome(
            job, meta, status, ORPHANED, delay=0, retries_left=int(job.retries_left or 1) - 1
        )
    else:
        log_outcome(job, meta, status, ORPHANED)


def retry_delay(job: Job) -> int | None:
    """Seconds before the next attempt of a failed job, or None when it has none left."""
    return int(job.get_retry_interval()) if job.retries_left else None
