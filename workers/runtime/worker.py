"""The RQ worker of the `worker:` Procfile line.

A plain RQ `Worker` (one forked work-horse per job, so a crashing or leaking handler cannot
take the worker down) that also:
- counts every attempt in the job's meta and gives the full retry budget back to a job
  requeued from the dead letters by anything that is not our command (`retries.py`);
- once RQ has settled an attempt, records its state in the meta (where rq-dashboard and the
  `webhooks` command show it), in the ledger, in the counters, and in one log line
  (`outcomes.py`).
RQ itself handles SIGTERM: the current job finishes, then the worker exits.

Recovery is faster than RQ's defaults: a job whose worker died (worker and work-horse
killed) is found by another worker's maintenance sweep within about 20 s, not about eleven
minutes (heartbeats every 5 s that expire after 15 s instead of 60+, an idle worker waking
every 20 s, a sweep every WEBHOOK_MAINTENANCE_INTERVAL). Starting and supervising the
process is `run.py`'s concern.
"""

from __future__ import annotations

import time
from types import FrameType
from typing import Any

from rq import Queue, SimpleWorker, Worker
from rq.executions import Execution
from rq.job import Job, JobStatus
from rq.registry import StartedJobRegistry
from rq.worker import BaseWorker

from app.jobstate import EventStatus, Outcome
from app.logs import log_state
from app.settings import Settings
from workers.runtime.outcomes import log_outcome, meta_of, record, save_meta, settle
from workers.runtime.retries import last_error, restore_budget, retry_delay

# Seconds between heartbeats of a running job, and how long a missed one is tolerated.
HEARTBEAT_INTERVAL = 5
HEARTBEAT_GRACE = 10
# An idle worker blocks on the queue for WORKER_TTL - 15 s, then runs due maintenance.
WORKER_TTL = 35
SUCCESS = frozenset({EventStatus.DONE, EventStatus.IGNORED, EventStatus.STALE})


class WebhookWorkerMixin(BaseWorker):
    """What every webhook worker adds to RQ's, forking (the default) or not."""

    _last_beat = 0.0

    def __init__(self, *args: Any, settings: Settings, **kwargs: Any) -> None:
        kwargs.setdefault("job_monitoring_interval", HEARTBEAT_INTERVAL)
        kwargs.setdefault("worker_ttl", WORKER_TTL)
        super().__init__(*args, **kwargs)
        self.settings = settings
        self.stop_signalled = False

    def heartbeat(self, timeout: int | None = None, pipeline: Any = None) -> None:
        # RQ beats twice per job, each time a round trip: a third of a no-op job's cost.
        # The worker's key lives WORKER_TTL, so one beat per HEARTBEAT_INTERVAL is plenty;
        # beats that set a job's TTL (with a timeout or inside a pipeline) always go out.
        now = time.monotonic()
        if timeout is None and pipeline is None and now - self._last_beat < HEARTBEAT_INTERVAL:
            return
        self._last_beat = now
        super().heartbeat(timeout, pipeline)

    def request_stop(self, signum: int, frame: FrameType | None) -> None:
        self.stop_signalled = True
        super().request_stop(signum, frame)  # type: ignore[no-untyped-call]

    def execute_job(self, job: Job, queue: Queue) -> None:
        self.begin_attempt(job)
        super().execute_job(job, queue)

    def begin_attempt(self, job: Job) -> None:
        meta = meta_of(job)
        requeued = meta.budget_spent_elsewhere(int(job.retries_left or 0))
        if requeued:
            restore_budget(job, meta, self.settings)
            log_state("requeued", *meta.labels, job_id=job.id, by="rq")
        meta.attempts += 1
        meta.state = EventStatus.RUNNING
        with self.connection.pipeline(transaction=False) as pipe:
            save_meta(pipe, job, meta)
            pipe.hset(job.key, "retries_left", job.retries_left or 0)
            if job.retry_intervals is not None:
                pipe.hset(job.key, "retry_intervals", _json_list(job.retry_intervals))
            record(pipe, job, meta, EventStatus.RUNNING, Outcome.REQUEUED if requeued else None)
            pipe.execute()

    def handle_job_success(
        self,
        job: Job,
        queue: Queue,
        started_job_registry: StartedJobRegistry,
        execution: Execution,
    ) -> None:
        super().handle_job_success(job, queue, started_job_registry, execution)
        # `deliver` put its outcome in the job's meta (the same job object, in this process).
        status = meta_of(job).state
        status = status if status in SUCCESS else EventStatus.DONE
        self._settle(job, status, Outcome(str(status)))

    def handle_job_failure(
        self,
        job: Job,
        queue: Queue,
        started_job_registry: StartedJobRegistry | None = None,
        exc_string: str = "",
        execution: Execution | None = None,
    ) -> None:
        delay = retry_delay(job)
        super().handle_job_failure(
            job,
            queue,
            started_job_registry=started_job_registry,
            exc_string=exc_string,
            execution=execution,
        )
        # RQ has decided: retried (scheduled or queued again), failed (our dead letters),
        # or stopped by a command (neither: RQ keeps stopped jobs apart).
        if job.get_status(refresh=False) in (JobStatus.SCHEDULED, JobStatus.QUEUED):
            self._settle(job, EventStatus.RETRYING, Outcome.RETRIED, last_error(exc_string), delay)
        else:
            self._settle(job, EventStatus.DEAD, Outcome.DEAD_LETTERED, last_error(exc_string))

    def _settle(
        self,
        job: Job,
        status: EventStatus,
        outcome: Outcome,
        error: str = "",
        delay: int | None = None,
    ) -> None:
        meta = meta_of(job)
        with self.connection.pipeline(transaction=False) as pipe:
            settle(pipe, job, meta, status, outcome, error)
            pipe.execute()
        log_outcome(job, meta, status, error, delay)


class WebhookWorker(WebhookWorkerMixin, Worker):
    """Forks a work-horse per job: a crashing or leaking handler cannot take it down, and a
    killed worker's job is retried by another within about 20 s."""

    def get_heartbeat_ttl(self, job: Job, working_time: float = 0.0) -> int:
        # RQ adds 60 s to every heartbeat, so a job orphaned by a killed worker waits at
        # least a minute before any sweep may retry it.
        interval = self.job_monitoring_interval
        if job.timeout and job.timeout > 0:
            interval = min(job.timeout - working_time, interval)
        return int(max(interval, 1)) + HEARTBEAT_GRACE


class WebhookSimpleWorker(WebhookWorkerMixin, SimpleWorker):
    """Runs handlers in the worker process itself (WEBHOOK_WORKER_MODE=simple): several times
    faster for trusted handlers, but a handler that crashes the interpreter takes the worker
    down, and a killed worker's job waits its timeout + 60 s before another retries it."""


def _json_list(values: list[int]) -> str:
    return "[" + ",".join(str(int(v)) for v in values) + "]"
