"""The RQ worker of the `worker:` Procfile line.

A plain RQ `Worker` (one forked work-horse per job, so a crashing or leaking handler cannot
take the worker down) that also:
- counts every attempt in `job.meta` and restores the retry budget of a job requeued from
  the dead letters by anything that is not our command (rq-dashboard, `rq requeue`);
- records the last error and the terminal state in `job.meta`, where rq-dashboard and the
  `webhooks` command show them;
- writes one JSON log line per terminal state: done, ignored, retry_scheduled, dead_lettered.
RQ itself handles SIGTERM: the current job finishes, then the worker exits.

Recovery is faster than RQ's defaults: a job whose worker died (worker and work-horse killed)
is found by another worker's maintenance sweep within about a minute, not about eleven
(heartbeats every 5 s that expire after 15 s instead of 60+, an idle worker waking every
20 s, a sweep every WEBHOOK_MAINTENANCE_INTERVAL). Starting and supervising the process is
`workers/run.py`'s concern.
"""

from __future__ import annotations

import time
from types import FrameType
from typing import Any

from rq import Queue, SimpleWorker, Worker
from rq.executions import Execution
from rq.job import Job
from rq.registry import StartedJobRegistry
from rq.worker import BaseWorker

from app.logs import log_state
from app.settings import Settings
from workers.budget import restore_budget, was_requeued
from workers.job import DONE, IGNORED, STALE
from workers.ledger import labels, record
from workers.orphans import WebhookJob

MAX_ERROR_LENGTH = 500
# Seconds between heartbeats of a running job, and how long a missed one is tolerated.
HEARTBEAT_INTERVAL = 5
HEARTBEAT_GRACE = 10
# An idle worker blocks on the queue for WORKER_TTL - 15 s, then runs due maintenance.
WORKER_TTL = 35


def last_error(exc_string: str) -> str:
    """The last non-empty line of a traceback: the exception and its message."""
    lines = [line.strip() for line in exc_string.strip().splitlines() if line.strip()]
    text = lines[-1] if lines else "unknown error"
    return text if len(text) <= MAX_ERROR_LENGTH else text[: MAX_ERROR_LENGTH - 1] + "~"


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
        requeued = was_requeued(job)
        if requeued:
            restore_budget(job, self.settings)
            log_state("requeued", *labels(job), job_id=job.id, by="rq")
        job.meta["attempts"] = int(job.meta.get("attempts", 0)) + 1
        job.meta["state"] = "running"
        with self.connection.pipeline(transaction=False) as pipe:
            pipe.hset(job.key, "meta", job.serializer.dumps(job.meta))
            pipe.hset(job.key, "retries_left", job.retries_left or 0)
            if job.retry_intervals is not None:
                pipe.hset(job.key, "retry_intervals", _json_list(job.retry_intervals))
            record(pipe, job, "running", "requeued" if requeued else None)
            pipe.execute()

    # RQ settles a job in one transaction and counts it there; our meta, ledger record and
    # counters ride in that same transaction instead of costing a round trip of their own.
    _settle: tuple[Job, str, str, dict[str, Any]] | None = None

    def increment_successful_job_count(self, pipeline: Any = None) -> None:
        super().increment_successful_job_count(pipeline)
        self._write_settlement(pipeline)

    def increment_failed_job_count(self, pipeline: Any = None) -> None:
        super().increment_failed_job_count(pipeline)
        self._write_settlement(pipeline)

    def _write_settlement(self, pipeline: Any) -> None:
        if self._settle is None:
            return
        job, status, outcome, fields = self._settle
        if pipeline is None:
            with self.connection.pipeline(transaction=False) as pipe:
                self._queue_settlement(pipe, job, status, outcome, fields)
                pipe.execute()
        else:
            self._queue_settlement(pipeline, job, status, outcome, fields)

    @staticmethod
    def _queue_settlement(
        pipe: Any, job: Job, status: str, outcome: str, fields: dict[str, Any]
    ) -> None:
        pipe.hset(job.key, "meta", job.serializer.dumps(job.meta))
        record(pipe, job, status, outcome, **fields)

    def handle_job_success(
        self,
        job: Job,
        queue: Queue,
        started_job_registry: StartedJobRegistry,
        execution: Execution,
    ) -> None:
        state = job._result if job._result in (DONE, IGNORED, STALE) else DONE
        job.meta["state"] = state
        job.meta["settled_at"] = time.time()
        self._settle = (job, state, state, {})
        try:
            super().handle_job_success(job, queue, started_job_registry, execution)
        finally:
            self._settle = None
        log_state(state, *labels(job), job_id=job.id, attempt=job.meta.get("attempts"))

    def handle_job_failure(
        self,
        job: Job,
        queue: Queue,
        started_job_registry: StartedJobRegistry | None = None,
        exc_string: str = "",
        execution: Execution | None = None,
    ) -> None:
        if isinstance(job, WebhookJob):
            job.handler_failed = True  # see workers/orphans.py
        stopped = self._stopped_job_id == job.id
        retry = bool(job.should_retry) and not stopped
        error = last_error(exc_string)
        job.meta["last_error"] = error
        delay = job.get_retry_interval() if retry else None
        if retry:
            job.meta["state"] = "retrying"
        else:
            job.meta.update(state="dead", dead=True, dead_at=time.time())
        outcome = "retried" if retry else "dead_lettered"
        self._settle = (job, job.meta["state"], outcome, {"last_error": error})
        try:
            super().handle_job_failure(
                job,
                queue,
                started_job_registry=started_job_registry,
                exc_string=exc_string,
                execution=execution,
            )
        finally:
            self._settle = None
        fields: dict[str, Any] = {
            "job_id": job.id,
            "attempt": job.meta.get("attempts"),
            "error": error,
        }
        if retry:
            log_state(
                "retry_scheduled",
                *labels(job),
                delay=delay,
                retries_left=job.retries_left,
                **fields,
            )
        else:
            log_state(
                "dead_lettered", *labels(job), permanent=bool(job.meta.get("permanent")), **fields
            )


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
