"""The worker of the `worker:` Procfile line: RQ's worker, taking its jobs in batches.

RQ's own loop runs it (registration, signals, maintenance, the scheduler, teardown); what
differs is one job at a time becoming a batch (`batch.py`): taken in one round trip
(`take.py`), begun in one transaction, run one job after another (`runner.py`), and
settled in one transaction with this project's writes (meta, ledger, counters) riding along
(`settlement.py`), while the next batch runs (`settling.py`).

- WEBHOOK_WORKER_MODE=fork (the default): a long-lived child runs the handlers, batch after
  batch (`horse.py`), so a crashing or leaking handler cannot take the worker down. If the
  child dies, the worker knows from its reports which jobs ended (`job_ends.py`): those
  settle as they ended, the one that was running counts a failed attempt, and the rest go
  back to the head of the queue with no attempt counted.
- WEBHOOK_WORKER_MODE=simple: the same in the worker process, for trusted handlers.
A killed worker's batch is recovered by another worker's maintenance within about 25 s
(heartbeats every 5 s that expire after 15 s, maintenance every 10 s; `recovery.py`); in
simple mode, the running job after its timeout + 10 s (the worker beats between handlers).
Its maintenance (recovery, RQ's sweeps) and its scheduler are `maintenance.py`'s; what it
changes of RQ's stop (a warm stop waits for the transaction in flight), `stopping.py`'s.

A batch outlives a cut of the worker's link to Redis: missed heartbeats do not stop it, the
runner reports the ends it could not write, and the worker keeps them and settles them once
Redis answers (`settling.py`), before it does anything else with Redis; a job taken
back meanwhile by another worker's recovery is left to it (`settlement.py`).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from functools import partial
from types import FrameType
from typing import Any

from rq import Queue
from rq.job import Job
from rq.utils import now
from rq.worker import WorkerStatus

from app.logs import logger
from app.settings import Settings
from workers.runtime import batch as batches
from workers.runtime.batch import Batch
from workers.runtime.horse import Horse
from workers.runtime.job_ends import apply_report, child_died
from workers.runtime.program import Program
from workers.runtime.runner import DEFAULT_TIMEOUT, StopAfterCurrent, run_batch
from workers.runtime.settling import SettlingWorker
from workers.runtime.spans import NO_SPANS, WorkerSpans
from workers.runtime.stream import LINK_ERRORS
from workers.runtime.take import take

# Seconds between heartbeats of a running batch, and how long a missed one is tolerated.
HEARTBEAT_INTERVAL = 5
HEARTBEAT_GRACE = 10
# An idle worker blocks on the queue for WORKER_TTL - 15 s, then runs due maintenance.
WORKER_TTL = 35


class WebhookWorker(SettlingWorker):
    def __init__(
        self,
        *args: Any,
        settings: Settings,
        scheduler_name: str | None = None,
        spans: WorkerSpans = NO_SPANS,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("job_monitoring_interval", HEARTBEAT_INTERVAL)
        kwargs.setdefault("worker_ttl", WORKER_TTL)
        super().__init__(*args, **kwargs)
        self.settings = settings
        self.scheduler_name = scheduler_name
        self.isolated = settings.webhook_worker_mode == "fork"
        self.stop_after_current = StopAfterCurrent()
        self.spans = spans
        self.horse = Horse(self.connection, settings, self.stop_after_current, spans)
        self._took = (0, 0)  # when the batch's take started and ended (ns), for its span
        self._batch: Batch | None = None
        self._beat_at = 0.0
        # Redis could not be reached during the running batch (a heartbeat failed).
        self._link_lost = False

    # --- RQ's loop: what it dequeues is a batch, what it executes is that batch --------------

    def dequeue_job_and_maintain_ttl(
        self, timeout: int | None, max_idle_time: int | None = None
    ) -> tuple[Job, Queue] | None:
        listening = "Listening on " + ",".join(self.queue_names())
        self.procline(listening)  # type: ignore[no-untyped-call]
        queue = self.queues[0]
        beat = self.idle  # the first beat says the worker is idle too
        while True:
            try:
                beat()
                beat = self.heartbeat
                if self.should_run_maintenance_tasks:
                    self.run_maintenance_tasks()  # type: ignore[no-untyped-call]
                size = self.settings.webhook_batch_size
                took = time.time_ns()
                found = take(self.connection, queue, size, None)
            except LINK_ERRORS:
                if self._unsettled is None:
                    raise
                # What the last batch's handlers finished is settled first, once Redis
                # answers (`settle_unsettled` waits for it); then the loop starts again.
                self.settle_unsettled()
                continue
            if found is None and self._unsettled is not None:
                # Nothing to overlap it with: settle it now (a retry may come of it).
                self.settle_unsettled()
                continue
            if found is None:
                if timeout is None:
                    return None  # burst: the queue is empty
                # Wake for a maintenance that recovery asked to come early.
                # `max_idle_time` (RQ's --max-idle-time) is not honoured: `run.py` never
                # passes one, and RQ's own command cannot build this worker (it needs settings).
                block = max(1, min(timeout, int(self.until_maintenance()) + 1))
                took = time.time_ns()
                found = take(self.connection, queue, size, block)
            if found is not None:
                self._took = (took, time.time_ns())
                self._batch = found
                return found.entries[0].job, queue

    def execute_job(self, job: Job, queue: Queue) -> None:
        batch, self._batch = self._batch, None
        assert batch is not None and batch.entries[0].job is job
        ttl = self.batch_ttl(batch)
        batch.trace = self.spans.batch(len(batch.entries), *self._took)
        # One transaction: a begin cut partway would leave jobs off the intermediate queue
        # and not yet in the started registry, where no recovery looks.
        with self.critical(), batch.trace.step("begin"), self.connection.pipeline() as pipe:
            begin = Program()
            batches.begin_executions(begin, self, batch, ttl)
            begin.queue_on(pipe)
            self.set_state(WorkerStatus.BUSY, pipeline=pipe)
            self.heartbeat(ttl, pipeline=pipe)
            pipe.execute()
        self._beat_at = time.monotonic()
        self._link_lost = False
        if self.isolated:
            self.run_in_horse(batch)
        else:
            # The previous batch's settlement, applied by Redis while this one runs.
            sent = self.send_settlement()
            report, stop = partial(apply_report, batch), self.stop_after_current
            try:
                run_batch(
                    batch.jobs,
                    self.connection,
                    self.settings,
                    report,
                    stop,
                    self.beat_when_due(batch),
                    self.spans,
                    batch.trace.traceparent,
                )
            finally:
                self.finish_settlement(sent)
        self._unsettled = batch
        if self._link_lost:
            # Settled now, once Redis answers, rather than after RQ's next write fails and
            # ends the worker's loop: the worker goes on as it was.
            self.settle_unsettled()

    def teardown(self) -> None:
        try:
            self.settle_unsettled()
        finally:
            self.horse.close()
            super().teardown()  # type: ignore[no-untyped-call]

    def get_heartbeat_ttl(self, job: Job, working_time: float = 0.0) -> int:
        # RQ adds 60 s to every heartbeat, so a job orphaned by a killed worker would wait at
        # least a minute before any sweep may retry it.
        if self.isolated:
            return int(self.job_monitoring_interval) + HEARTBEAT_GRACE
        # In simple mode the worker heartbeats only between handlers: a running one must
        # not look orphaned before its own timeout ends it (as RQ's SimpleWorker does).
        return int(job.timeout or DEFAULT_TIMEOUT) + HEARTBEAT_GRACE

    def batch_ttl(self, batch: Batch) -> int:
        return max(self.get_heartbeat_ttl(entry.job) for entry in batch.entries)

    def beat_when_due(self, batch: Batch) -> Callable[[], None]:
        def beat() -> None:
            if time.monotonic() - self._beat_at >= self.job_monitoring_interval:
                self.keep_alive(batch)

        return beat

    def request_stop(self, signum: int, frame: FrameType | None) -> None:
        self.stop_signalled = True
        self.stop_after_current.request()
        self.horse.signal(signal.SIGUSR1)  # finish the running job, start no other
        super().request_stop(signum, frame)  # type: ignore[no-untyped-call]

    def inherited_fds(self) -> tuple[int, ...]:
        # The worker's ends of the child's pipes: only the worker may hold them.
        return tuple(fd for fd in (self.horse.tasks, self.horse.reports) if fd >= 0)

    def kill_horse(self, sig: signal.Signals = signal.SIGKILL) -> None:
        self.horse.signal(sig)  # a cold shutdown (a second Ctrl+C) takes the child down too

    # --- a batch in the child -------------------------------------------------------------------

    def run_in_horse(self, batch: Batch) -> None:
        hashes = [(e.job.id, e.fields) for e in batch.entries]
        self.horse.ensure()
        self._horse_pid = self.horse.pid
        # The previous batch is settled while the child runs this one: two cores busy.
        status = self.horse.run(
            hashes,
            partial(apply_report, batch),
            lambda: self.keep_alive(batch),
            self.job_monitoring_interval,
            before_wait=self.settle_unsettled,
            batch_trace=batch.trace.traceparent,
        )
        self._horse_pid = self.horse.pid
        if status:
            child_died(self.connection, batch, status)

    def keep_alive(self, batch: Batch) -> None:
        ttl = self.batch_ttl(batch)
        try:
            with self.connection.pipeline() as pipe:
                self.heartbeat(ttl, pipeline=pipe)
                batches.heartbeat(pipe, batch, ttl)
                pipe.time()  # Redis's clock for the next expiries and retry times, in passing
                batch.clock.anchor(pipe.execute()[-1])
        except LINK_ERRORS as exc:
            # The batch goes on: what its handlers finish is kept, and settled once Redis
            # answers. The jobs stay this worker's until their heartbeats run out.
            if not self._link_lost:
                logger.warning(
                    "redis unreachable during a batch: its heartbeat failed; the batch goes on",
                    extra={"error": type(exc).__name__},
                )
            self._link_lost = True
        self._beat_at = time.monotonic()
        running = next((e for e in batch.entries if e.started_at and not e.ended_at), None)
        if running is not None and running.started_at is not None:
            timeout = running.job.timeout or DEFAULT_TIMEOUT
            if (now() - running.started_at).total_seconds() > timeout + 60:
                self.horse.signal(signal.SIGKILL)  # stuck beyond its own death penalty
