"""Jobs whose worker died mid-attempt (SIGKILL, OOM, a lost machine).

RQ finds them in a later maintenance sweep (`AbandonedJobError`) and retries them through
`job.retry`, which waits the retry interval and so needs a scheduler, possibly the one
that died with the worker, whose lock then blocks the others for a minute. The handler
never failed, so there is nothing to back off from: such an attempt is retried at once
(still counted against the budget), or dead-lettered when the budget is spent, and either
way recorded in `job.meta` and logged like any other terminal state.

The worker sets `handler_failed` before RQ handles a failure it saw happen; only the sweep
reaches these methods without it.
"""

from __future__ import annotations

import time
from typing import Any

from rq.job import Job

from app.logs import log_state
from workers.ledger import labels, record

ORPHANED = "worker died during the attempt (AbandonedJobError)"


class WebhookJob(Job):
    handler_failed = False

    def get_retry_interval(self) -> int:
        return super().get_retry_interval() if self.handler_failed else 0

    def retry(self, queue: Any, pipeline: Any) -> None:
        if not self.handler_failed:
            self.meta.update(last_error=ORPHANED, state="retrying")
            record(pipeline, self, "retrying", "retried", last_error=ORPHANED)
            log_state(
                "retry_scheduled",
                *labels(self),
                job_id=self.id,
                delay=0,
                retries_left=(self.retries_left or 1) - 1,
                error=ORPHANED,
            )
        super().retry(queue, pipeline)

    def _handle_failure(self, exc_string: str, pipeline: Any, *args: Any, **kwargs: Any) -> None:
        if not self.handler_failed:
            self.meta.update(last_error=ORPHANED, state="dead", dead=True, dead_at=time.time())
            pipeline.hset(self.key, "meta", self.serializer.dumps(self.meta))
            record(pipeline, self, "dead", "dead_lettered", last_error=ORPHANED)
            log_state(
                "dead_lettered",
                *labels(self),
                job_id=self.id,
                permanent=False,
                attempt=self.meta.get("attempts"),
                error=ORPHANED,
            )
        super()._handle_failure(exc_string, pipeline, *args, **kwargs)
