"""Running a batch's jobs, one after another, and reporting each job as it goes (a job runs
its event's handlers: `deliver.py`).

The runner is the same whether it runs in a forked child (the default: a crashing or
leaking handler cannot take the worker down) or in the worker process (trusted handlers).
Before each job starts it streams the attempt's bookkeeping to Redis without waiting
for the replies (read once the batch is over): so Redis knows which job was running if
the whole machine dies, at no round trip per job. It reports to the worker through
`report`: a job started, then how it ended.

If Redis cannot be reached (the stream's connection is lost), a job that ended is still
reported as it ended, with the meta the runner could not write: the worker settles it
once Redis answers. No other job of the batch starts: Redis would not know it ran; the
jobs not started go back to the queue, no attempt counted.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from types import FrameType
from typing import Any

from redis import Redis
from rq.job import Job
from rq.utils import now

from app.jobstate import EventStatus, UnreadableJob
from app.logs import log_state
from app.settings import Settings
from workers.registry import registry
from workers.runtime.deadline import Deadline
from workers.runtime.deliver import checkpointing, handler_spans
from workers.runtime.outcomes import begin_attempt, read_event
from workers.runtime.retries import restore_budget
from workers.runtime.spans import NO_SPANS, WorkerSpans
from workers.runtime.stream import Stream
from workers.runtime.tracebacks import failures_of, stored_traceback

DEFAULT_TIMEOUT = 180


@dataclass(frozen=True, slots=True)
class Started:
    """A job starts: the attempt counted in the meta, the budget perhaps given back."""

    index: int
    at: datetime
    retries_left: int | None
    retry_intervals: list[int] | None
    meta: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Ended:
    """How one job ended, with what the job's own code changed on the job object (the
    budget and meta: `PermanentError` empties the budget; `deliver` records its outcome)."""

    index: int
    ok: bool
    return_value: Any
    exc_string: str
    retries_left: int | None
    retry_intervals: list[int] | None
    meta: dict[str, Any]
    at: datetime


Report = Callable[[Started | Ended], None]


class StopAfterCurrent:
    """Set by the worker's warm shutdown: finish the running job, start no other."""

    requested = False

    def request(self, signum: int | None = None, frame: FrameType | None = None) -> None:
        self.requested = True


def run_batch(
    jobs: list[Job],
    connection: Redis,
    settings: Settings,
    report: Report,
    stop: StopAfterCurrent,
    between: Callable[[], None] | None = None,
    spans: WorkerSpans = NO_SPANS,
    batch_trace: str = "",
) -> None:
    """Run the jobs in order, reporting each; `between` runs before each job (the
    worker's heartbeat, when the batch runs in its own process). With tracing on, each
    attempt's span links to `batch_trace`, the batch's."""
    with Stream(connection) as stream, Deadline() as deadline:
        token = checkpointing.set(lambda job: _checkpoint(stream, job))
        traced = handler_spans.set(None if spans is NO_SPANS else spans.handler)
        try:
            run = Run(settings, report, stop, between, stream, deadline, spans, batch_trace)
            for index, job in enumerate(jobs):
                if stop.requested or stream.lost:
                    return
                run.one(index, job)
        finally:
            handler_spans.reset(traced)
            checkpointing.reset(token)


@dataclass(frozen=True, slots=True)
class Run:
    """One batch's run: what each job's attempt needs."""

    settings: Settings
    report: Report
    stop: StopAfterCurrent
    between: Callable[[], None] | None
    stream: Stream
    deadline: Deadline
    spans: WorkerSpans
    batch_trace: str

    def one(self, index: int, job: Job) -> None:
        if self.between is not None:
            self.between()
        try:
            meta, call = read_event(job)
        except UnreadableJob as exc:
            self.report(refused(index, job, str(exc)))
            return
        requeued = meta.budget_spent_elsewhere(int(job.retries_left or 0))
        if requeued:
            restore_budget(job, meta, self.settings)
            log_state("requeued", *meta.labels, job_id=job.id, by="rq")
        meta.attempts += 1
        meta.state = EventStatus.RUNNING
        meta.turns = []  # this attempt's, as they end
        replayed = "x-webhook-replayed-from" in call.headers
        # An event no handler takes, and none pending from an earlier attempt: nothing runs,
        # so nothing needs writing before its settlement (a worker's recovery that finds it
        # unsettled takes it again, which runs nothing either).
        quiet = (
            not requeued and not meta.handlers and not registry.handlers_for(call.source, call.type)
        )
        with self.spans.attempt(job, meta, self.batch_trace, replayed) as span:
            if quiet:
                job.meta = meta.to_meta()  # the attempt, as `deliver` reads it
            else:
                begin_attempt(self.stream, job, meta, requeued)
                if not self.stream.send():
                    return  # Redis cannot be told it starts: it does not (`run_batch` stops)
            self.report(
                Started(index, now(), job.retries_left, job.retry_intervals, dict(job.meta))
            )
            ended = perform(index, job, self.deadline)
            span.ended(job, meta, ended.ok, _last_line(ended.exc_string))
        if quiet:
            self.report(ended)
            return
        # `deliver` wrote its outcome and each handler's turn in the meta: if the worker
        # dies before it settles the batch, a live worker's recovery settles this job from
        # it (a success), or retries it without the handlers that succeeded (a failure).
        # Sent at once, not with the next job's start (one write fewer, 5 to 8% of the
        # drain): until then a dead worker's recovery would run them again. If the write
        # cannot be sent (Redis unreachable), the report still goes: the worker settles
        # the job, with this meta, once Redis answers.
        _write_meta(self.stream, job)
        self.report(ended)


def _last_line(text: str) -> str:
    """A stored traceback's last line: the exception, as the ledger's error shows it."""
    return text.rstrip().rsplit("\n", 1)[-1] if text else ""


def _checkpoint(stream: Stream, job: Job) -> None:
    """A handler's success, written mid-attempt, while its job's deadline runs: the alarm
    waits until the write is whole (raised inside it, it would leave the stream's count of
    replies off by one, and the connection unusable)."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    try:
        _write_meta(stream, job)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def _write_meta(stream: Stream, job: Job) -> None:
    stream.execute_command("HSET", job.key, "meta", job.serializer.dumps(job.meta))
    stream.send()


def refused(index: int, job: Job, reason: str) -> Ended:
    """A job that is not an event's ends failed with no retry left: in the failed registry,
    where an operator sees it, instead of stopping the batches behind it."""
    meta = job.meta if isinstance(job.meta, dict) else {}
    return Ended(index, False, None, f"UnreadableJob: {reason}", 0, None, meta, now())


def perform(index: int, job: Job, deadline: Deadline) -> Ended:
    """One job run under its timeout, as RQ's `perform_job` runs it."""
    try:
        deadline.start(job.timeout or DEFAULT_TIMEOUT)
        try:
            value = job.perform()
        finally:
            deadline.cancel()
        ok, exc_string = True, ""
    except Exception as exc:
        # The user's frames first: what the dashboard's <pre> and the Events page show.
        exc_string = stored_traceback(exc, failures_of(exc, job.meta))
        ok, value = False, None
    return Ended(
        index,
        ok,
        value,
        exc_string,
        job.retries_left,
        job.retry_intervals,
        dict(job.meta),
        now(),
    )


def child_signals(stop: StopAfterCurrent) -> None:
    """In a forked child: Ctrl+C and the stop signals are the worker's; the worker asks the
    child to stop after its current job with SIGUSR1."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGUSR1, stop.request)
