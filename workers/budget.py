"""The retry budget of a job, and how a requeue gives it back in full.

RQ's requeue (its CLI, `FailedJobRegistry.requeue`, rq-dashboard's buttons) leaves
`retries_left` at 0, so a requeued event would get a single attempt. `job.meta` keeps
`attempts` (every start, across requeues), `budget` (retries granted) and `budget_start`
(attempts made before the current budget). While a budget runs,
`attempts - budget_start + retries_left == budget`; a job that comes back from the
failed registry breaks that equation (or still carries `dead`), which is how the worker
notices a requeue it did not make and restores the budget itself.
"""

from __future__ import annotations

from typing import Any

from rq.job import Job

from app.settings import Settings


def was_requeued(job: Job) -> bool:
    meta: dict[str, Any] = job.meta
    if meta.get("dead"):
        return True
    attempts = int(meta.get("attempts", 0))
    start = int(meta.get("budget_start", 0))
    budget = int(meta.get("budget", 0))
    return attempts - start + int(job.retries_left or 0) > budget


def restore_budget(job: Job, settings: Settings) -> None:
    """Give the job the full configured retry budget again (in memory; the caller saves)."""
    budget = settings.webhook_max_retries
    job.retries_left = budget if budget else None
    job.retry_intervals = settings.retry_intervals if budget else None
    job.meta.update(
        budget=budget,
        budget_start=int(job.meta.get("attempts", 0)),
        dead=False,
        permanent=False,
        state="queued",
    )
    job.meta["requeues"] = int(job.meta.get("requeues", 0)) + 1
