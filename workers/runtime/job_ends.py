"""What the worker knows of how each job of its batch ended: the runner's reports (a job
started, then ended), applied to the batch's entries as they come, and what a batch child
that died leaves of the job it was running.

The jobs a dead child had not started stay unstarted: the settlement puts them back at the
head of the queue with no attempt counted (`settlement.py`).
"""

from __future__ import annotations

import contextlib
import os
from typing import cast

from redis import Redis
from redis.exceptions import RedisError
from rq.utils import now

from workers.runtime.batch import Batch, Fate
from workers.runtime.runner import Ended, Started


def apply_report(batch: Batch, report: Started | Ended) -> None:
    """One report of the runner, on its job: what the job's own code changed (the budget,
    the meta), when it started, and how it ended."""
    entry = batch.entries[report.index]
    job = entry.job
    job.retries_left, job.retry_intervals = report.retries_left, report.retry_intervals
    job.meta = report.meta
    if isinstance(report, Started):
        entry.started_at = report.at
        return
    job._result = report.return_value
    entry.ended_at, entry.exc_string = report.at, report.exc_string
    entry.fate = Fate.SUCCEEDED if report.ok else Fate.FAILED


def child_died(connection: Redis, batch: Batch, status: int) -> None:
    """The job a dead child was running counts a failed attempt (`status` is waitpid's)."""
    cause = f" (signal {os.WTERMSIG(status)})" if os.WIFSIGNALED(status) else ""
    for entry in batch.entries:
        if entry.started_at and not entry.ended_at:
            # The meta as the child last wrote it: its checkpoints name the handlers that
            # succeeded before it died, which the Started report does not.
            with contextlib.suppress(RedisError):  # then as reported: at least once
                stored = cast(bytes | None, connection.hget(entry.job.key, "meta"))
                if stored:
                    entry.job.meta = entry.job.serializer.loads(stored)
            entry.fate, entry.ended_at = Fate.FAILED, now()
            entry.exc_string = (
                f"Work-horse terminated unexpectedly; waitpid returned {status}{cause}"
            )
