"""The worker of the `worker:` Procfile line: RQ's worker, taking its jobs in batches.

RQ's own loop runs it (registration, signals, maintenance, the scheduler, teardown); what
differs is one job at a time becoming a batch (`batch.py`): taken in one round trip, begun
in one pipeline, run one handler after another in a forked child (`runner.py`), and settled
in one pipeline with this project's writes (meta, ledger, counters) riding along.

- WEBHOOK_WORKER_MODE=fork (the default): one child per batch, so a crashing or leaking
  handler cannot take the worker down. If the child dies, the worker knows from its reports
  which jobs ended: those settle as they ended, the one that was running counts a failed
  attempt, and the rest go back to the head of the queue with no attempt counted.
- WEBHOOK_WORKER_MODE=simple: the same in the worker process, for trusted handlers.
A killed worker's batch is recovered by another worker's sweep of the started registry,
within about 20 s (heartbeats every 5 s that expire after 15 s; `retries.py`).
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import struct
from types import FrameType
from typing import Any

from rq import Queue
from rq.job import Job
from rq.registry import clean_registries
from rq.utils import now
from rq.worker import BaseWorker, WorkerStatus
from rq.worker_registration import clean_worker_registry

from app.jobstate import EventCall, EventStatus, JobMeta, Outcome
from app.settings import Settings
from workers.runtime import batch as batches
from workers.runtime.batch import Batch, Fate
from workers.runtime.outcomes import log_outcome, meta_of, settle
from workers.runtime.recovery import recover
from workers.runtime.retries import last_error, retry_delay
from workers.runtime.runner import Ended, Started, StopAfterCurrent, child_signals, run_batch

# Seconds between heartbeats of a running batch, and how long a missed one is tolerated.
HEARTBEAT_INTERVAL = 5
HEARTBEAT_GRACE = 10
# An idle worker blocks on the queue for WORKER_TTL - 15 s, then runs due maintenance.
WORKER_TTL = 35
SUCCESS = frozenset({EventStatus.DONE, EventStatus.IGNORED, EventStatus.STALE})
_LENGTH = struct.Struct("!I")


class WebhookWorker(BaseWorker):
    def __init__(self, *args: Any, settings: Settings, **kwargs: Any) -> None:
        kwargs.setdefault("job_monitoring_interval", HEARTBEAT_INTERVAL)
        kwargs.setdefault("worker_ttl", WORKER_TTL)
        super().__init__(*args, **kwargs)
        self.settings = settings
        self.isolated = settings.webhook_worker_mode == "fork"
        self.stop_signalled = False
        self.stop_after_current = StopAfterCurrent()
        self._batch: Batch | None = None
        self._child = 0

    # --- RQ's loop: what it dequeues is a batch, what it executes is that batch --------------

    def dequeue_job_and_maintain_ttl(
        self, timeout: int | None, max_idle_time: int | None = None
    ) -> tuple[Job, Queue] | None:
        self.set_state(WorkerStatus.IDLE)
        listening = "Listening on " + ",".join(self.queue_names())
        self.procline(listening)  # type: ignore[no-untyped-call]
        queue = self.queues[0]
        idle_since = now()
        while True:
            self.heartbeat()
            if self.should_run_maintenance_tasks:
                self.run_maintenance_tasks()  # type: ignore[no-untyped-call]
            block = timeout
            if max_idle_time is not None and timeout is not None:
                left = max_idle_time - (now() - idle_since).total_seconds()
                if left <= 0:
                    return None
                block = max(1, min(timeout, int(left)))
            found = batches.take(self.connection, queue, self.settings.webhook_batch_size, block)
            if found is not None:
                self._batch = found
                return found.entries[0].job, queue
            if timeout is None:
                return None  # burst: the queue is empty

    def execute_job(self, job: Job, queue: Queue) -> None:
        batch, self._batch = self._batch, None
        assert batch is not None and batch.entries[0].job is job
        with self.connection.pipeline() as pipe:
            batches.begin(pipe, self, batch, self.get_heartbeat_ttl(job))
            self.set_state(WorkerStatus.BUSY, pipeline=pipe)
            self.heartbeat(self.get_heartbeat_ttl(job), pipeline=pipe)
            pipe.execute()
        if self.isolated:
            self.run_in_child(batch)
        else:
            run_batch(
                batch.jobs,
                self.connection,
                self.settings,
                self.reported(batch),
                self.stop_after_current,
            )
        self.settle(batch)
        self.set_state(WorkerStatus.IDLE)

    def clean_registries(self) -> None:
        """RQ's maintenance, with what dead workers held taken back first (`recovery.py`)."""
        for queue in self.queues:
            # One worker at a time, under RQ's own lock; RQ's sweep then finds only the jobs
            # that were running when their worker died.
            if queue.acquire_maintenance_lock():
                try:
                    recover(self, queue)
                    clean_registries(queue, self._exc_handlers)
                    clean_worker_registry(queue)
                    queue.intermediate_queue.cleanup(self, queue)
                finally:
                    queue.release_maintenance_lock()  # type: ignore[no-untyped-call]
        self.last_cleaned_at = now()  # type: ignore[assignment]

    def get_heartbeat_ttl(self, job: Job, working_time: float = 0.0) -> int:
        # RQ adds 60 s to every heartbeat, so a job orphaned by a killed worker would wait at
        # least a minute before any sweep may retry it.
        return int(self.job_monitoring_interval) + HEARTBEAT_GRACE

    def request_stop(self, signum: int, frame: FrameType | None) -> None:
        self.stop_signalled = True
        self.stop_after_current.request()
        if self._child:
            os.kill(self._child, signal.SIGUSR1)  # finish the running handler, start no other
        super().request_stop(signum, frame)  # type: ignore[no-untyped-call]

    # --- a batch in a child -------------------------------------------------------------------

    def run_in_child(self, batch: Batch) -> None:
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: run, report through the pipe, exit without cleanup
            os.close(read_end)
            os.setpgrp()  # the worker's process group gets Ctrl+C; the child finishes its job
            child_signals(self.stop_after_current)
            code = 1
            try:
                run_batch(
                    batch.jobs,
                    self.connection,
                    self.settings,
                    lambda report: _send(write_end, report),
                    self.stop_after_current,
                )
                code = 0
            finally:
                os._exit(code)
        os.close(write_end)
        self._child = self._horse_pid = pid
        try:
            self.monitor(batch, read_end)
            _, status = os.waitpid(pid, 0)
        finally:
            os.close(read_end)
            self._child = self._horse_pid = 0
        if status != 0:
            self.child_died(batch, status)

    def monitor(self, batch: Batch, read_end: int) -> None:
        """Read the child's reports as they come; between them, keep the batch alive and
        stop a handler that outlived its timeout."""
        apply = self.reported(batch)
        buffer = b""
        while True:
            ready, _, _ = select.select([read_end], [], [], self.job_monitoring_interval)
            if not ready:
                self.keep_alive(batch)
                continue
            chunk = os.read(read_end, 65536)
            if not chunk:
                return
            buffer += chunk
            while len(buffer) >= _LENGTH.size:
                (size,) = _LENGTH.unpack_from(buffer)
                if len(buffer) < _LENGTH.size + size:
                    break
                apply(pickle.loads(buffer[_LENGTH.size : _LENGTH.size + size]))  # noqa: S301
                buffer = buffer[_LENGTH.size + size :]

    def keep_alive(self, batch: Batch) -> None:
        with self.connection.pipeline() as pipe:
            self.heartbeat(self.get_heartbeat_ttl(batch.entries[0].job), pipeline=pipe)
            batches.heartbeat(pipe, batch, self.get_heartbeat_ttl(batch.entries[0].job))
            pipe.execute()
        running = next((e for e in batch.entries if e.started_at and not e.ended_at), None)
        if running is not None and self._child:
            timeout = running.job.timeout or 180
            if (now() - running.started_at).total_seconds() > timeout + 60:  # type: ignore[operator]
                os.kill(self._child, signal.SIGKILL)  # stuck beyond the death penalty

    def child_died(self, batch: Batch, status: int) -> None:
        cause = f" (signal {os.WTERMSIG(status)})" if os.WIFSIGNALED(status) else ""
        for entry in batch.entries:
            if entry.started_at and not entry.ended_at:
                entry.fate, entry.ended_at = Fate.FAILED, now()
                entry.exc_string = (
                    f"Work-horse terminated unexpectedly; waitpid returned {status}{cause}"
                )

    def reported(self, batch: Batch) -> Any:
        def apply(report: Started | Ended) -> None:
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

        return apply

    # --- settlement: one pipeline for the batch ------------------------------------------------

    def settle(self, batch: Batch) -> None:
        logged: list[tuple[Job, JobMeta, EventStatus, str, int | None]] = []
        with self.connection.pipeline() as pipe:
            for entry in batch.entries:
                job, meta = entry.job, meta_of(entry.job)
                if entry.fate is Fate.NOT_STARTED:
                    continue
                job.started_at, job.ended_at = entry.started_at, entry.ended_at
                raw = EventCall.from_args(job.args).raw
                if entry.fate is Fate.SUCCEEDED:
                    status = meta.state if meta.state in SUCCESS else EventStatus.DONE
                    result_ttl = job.get_result_ttl(self.default_result_ttl)
                    batches.settle_success(pipe, self, entry, result_ttl)
                    settle(pipe, job, meta, status, Outcome(str(status)), payload=raw)
                    logged.append((job, meta, status, "", None))
                    continue
                delay, error = retry_delay(job), last_error(entry.exc_string)
                if batches.settle_failure(pipe, self, batch, entry):
                    settle(pipe, job, meta, EventStatus.RETRYING, Outcome.RETRIED, error)
                    logged.append((job, meta, EventStatus.RETRYING, error, delay))
                else:
                    settle(pipe, job, meta, EventStatus.DEAD, Outcome.DEAD_LETTERED, error, raw)
                    logged.append((job, meta, EventStatus.DEAD, error, None))
            not_started = [e for e in batch.entries if e.fate is Fate.NOT_STARTED]
            batches.put_back(pipe, self, batch, not_started)
            pipe.execute()
        for job, meta, status, error, delay in logged:
            log_outcome(job, meta, status, error, delay)


def _send(fd: int, report: Started | Ended) -> None:
    data = pickle.dumps(report, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_LENGTH.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]
