"""A batch of jobs on RQ's own data model: taken in one round trip (`take.py`), begun in one
pipeline, settled in one pipeline.

RQ's worker spends about 60 commands and a dozen round trips on each job; with Redis
fsyncing every write (`appendfsync always`), each round trip that writes costs a disk
sync. A batch pays them once for up to WEBHOOK_BATCH_SIZE jobs, and writes exactly what
RQ writes for each job: the intermediate queue, executions, the started, finished, failed
and scheduled registries, results, worker state and counters (a test compares the keys
with RQ's own worker). The RQ methods used here, some of them private, are listed in the
"RQ internals we rely on" of docs/internals.md with the tests that pin them.

Every score another process compares (the started and execution registries' expiries, a
retry's due time, the finished registry's expiry) is computed from Redis's clock
(`clock.py`), which the take script read with the batch and each heartbeat refreshes: RQ's
own methods that write those scores use the host's clock, so they are written here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import Enum
from typing import TYPE_CHECKING, Any
from uuid import uuid4

from redis.client import Pipeline
from rq import Queue
from rq.executions import Execution, ExecutionRegistry, cleanup_execution
from rq.job import Job, JobStatus
from rq.registry import FinishedJobRegistry, StartedJobRegistry
from rq.results import Result
from rq.utils import now, utcformat

from workers.runtime.clock import RedisClock, due_at
from workers.runtime.rq_worker import RQWorker
from workers.runtime.spans import NO_SPAN, BatchSpan

if TYPE_CHECKING:
    from workers.runtime.settlement_writes import Logged


class Fate(Enum):
    """What became of one job of a batch."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    # The handler never started (the child died before it, or a stop was requested): the
    # job goes back to the head of the queue, no attempt counted.
    NOT_STARTED = "not_started"


@dataclass(slots=True)
class Entry:
    job: Job
    execution: Execution | None = None
    # The job hash as taken: what the child rebuilds the job from.
    fields: dict[bytes, bytes] = field(default_factory=dict)
    fate: Fate = Fate.NOT_STARTED
    exc_string: str = ""
    started_at: datetime | None = None
    ended_at: datetime | None = None


@dataclass(slots=True)
class Batch:
    queue: Queue
    entries: list[Entry] = field(default_factory=list)
    # Built once: RQ resolves its serializer anew for every registry object it makes.
    # Its span of the shared work (take, begin, settle), when tracing is on.
    trace: BatchSpan = NO_SPAN
    started: StartedJobRegistry = field(init=False)
    finished: FinishedJobRegistry = field(init=False)
    # Redis's clock, read by the take (or by recovery) and refreshed by each heartbeat.
    clock: RedisClock = field(init=False)
    # What each settlement whose answer was lost would have logged, by job id: it may have
    # been applied, and a later try that finds the job settled logs it if it was.
    unanswered: dict[str, list[Logged]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.started = self.queue.started_job_registry
        self.finished = self.queue.finished_job_registry
        self.clock = RedisClock(self.queue.connection)

    @property
    def jobs(self) -> list[Job]:
        return [entry.job for entry in self.entries]


def begin_executions(pipe: Pipeline, worker: RQWorker, batch: Batch, ttl: int) -> None:
    """Each job becomes an execution of this worker, in the started registry, off the
    intermediate queue: what RQ's `Execution.create` and `prepare_job_execution` write,
    with the registry writes that take many members made once for the batch, and the
    expiries from Redis's clock."""
    started: dict[str, float] = {}
    expires = batch.clock.now() + ttl
    for entry in batch.entries:
        job = entry.job
        execution = Execution(uuid4().hex, job.id, job.connection, worker_name=worker.name)
        execution._job = job
        execution.save(ttl=ttl, pipeline=pipe)
        _add_execution(pipe, execution, expires, ttl)
        started[execution.composite_key] = expires
        entry.execution = worker.executions[execution.id] = execution
        job.prepare_for_execution(worker.name, pipeline=pipe)
        pipe.persist(job.key)
        pipe.lrem(batch.queue.intermediate_queue_key, 1, job.id)
    pipe.zadd(batch.started.key, started)
    worker_executions = batch.entries[0].execution.worker_executions_key  # type: ignore[union-attr]
    pipe.sadd(worker_executions, *started)
    pipe.expire(worker_executions, ttl + 60)


def heartbeat(pipe: Pipeline, batch: Batch, ttl: int) -> None:
    """Keep every execution of the batch alive until it settles, as RQ's
    `maintain_heartbeats` does for one: those whose handler returned too, or another
    worker's recovery would settle them while their batch runs. What RQ's
    `Execution.heartbeat` writes, with the expiries from Redis's clock."""
    expires = batch.clock.now() + ttl
    started: dict[str, float] = {}
    for entry in batch.entries:
        execution = entry.execution
        assert execution is not None  # begun before its first heartbeat
        execution.last_heartbeat = now()  # shown to people: the local clock
        pipe.hset(execution.key, "last_heartbeat", execution.last_heartbeat.timestamp())
        pipe.expire(execution.key, ttl)
        _add_execution(pipe, execution, expires, ttl, xx=True)
        started[execution.composite_key] = expires
    pipe.zadd(batch.started.key, started, xx=True)


def _add_execution(
    pipe: Pipeline, execution: Execution, expires: float, ttl: int, xx: bool = False
) -> None:
    """RQ's `ExecutionRegistry.add` (the job's executions, kept 60 s past their expiry),
    with the expiry given."""
    key = ExecutionRegistry(execution.job_id, connection=execution.connection).key
    pipe.zadd(key, {execution.id: expires + 60}, xx=xx)
    pipe.expire(key, ttl + 60)


def settle_successes(
    pipe: Pipeline, worker: RQWorker, batch: Batch, entries: Sequence[Entry]
) -> None:
    """What RQ's `handle_job_success` writes for each job (status, timestamps and result in
    the job's hash, a result in its stream, the finished registry, expiry, the execution
    cleaned up, the worker's counters), with the writes RQ makes per job that can take many
    members made once per batch. The job's meta is saved in the same HSET."""
    if not entries:
        return
    queue, finished, started = batch.queue, batch.finished, batch.started
    members: dict[str, float] = {}
    executions: list[Execution] = []
    total = timedelta()
    at = batch.clock.now()
    for entry in entries:
        job, execution = entry.job, entry.execution
        assert execution is not None and entry.started_at and entry.ended_at
        result_ttl = job.get_result_ttl(worker.default_result_ttl)
        job._status = JobStatus.FINISHED
        job.last_heartbeat = entry.ended_at
        # The fields RQ's whole-hash save would change (it re-compresses the call data and
        # formats a dozen dates to write them again as they are), our meta with them.
        ended = utcformat(entry.ended_at)
        pipe.hset(
            job.key,
            mapping={
                "status": JobStatus.FINISHED.value,
                "started_at": utcformat(entry.started_at),
                "ended_at": ended,
                "last_heartbeat": ended,
                "meta": job.serializer.dumps(job.meta),
            },
        )
        Result.create(
            job,
            Result.Type.SUCCESSFUL,
            result_ttl,
            return_value=job._result,
            worker_name=worker.name,
            pipeline=pipe,
            execution_id=execution.id,
            execution_started_at=execution.created_at,
            execution_ended_at=entry.ended_at,
        )
        # An event's job carries no result_ttl of its own and the worker keeps RQ's default
        # (500 s): RQ's 0 (keep nothing) and -1 (keep forever) cannot come here.
        pipe.expire(job.key, result_ttl)
        members[job.id] = at + result_ttl
        pipe.zrem(ExecutionRegistry(job.id, connection=queue.connection).key, execution.id)
        executions.append(execution)
        worker.executions.pop(execution.id, None)
        total += entry.ended_at - entry.started_at
    pipe.zadd(finished.key, members)
    pipe.zrem(started.key, *[e.composite_key for e in executions])
    pipe.delete(*[e.key for e in executions])
    pipe.srem(executions[0].worker_executions_key, *[e.composite_key for e in executions])
    pipe.hincrby(worker.key, "successful_job_count", len(entries))
    pipe.hincrbyfloat(worker.key, "total_working_time", total.total_seconds())


def fail_execution(pipe: Pipeline, worker: RQWorker, batch: Batch, entry: Entry) -> bool:
    """What RQ's `handle_job_failure` writes, on the batch's pipeline. True when the job
    was retried (scheduled or queued again), False when it went to the failed registry."""
    job, execution = entry.job, entry.execution
    assert execution is not None
    retry = bool(job.should_retry)
    if not retry:
        job.set_status(JobStatus.FAILED, pipeline=pipe)
    cleanup_execution(_as_rqs(worker), job, pipe, execution)
    if not retry:
        job._handle_failure(
            entry.exc_string,
            pipeline=pipe,
            worker_name=worker.name,
            execution_id=execution.id,
            execution_started_at=execution.created_at,
            execution_ended_at=entry.ended_at,
        )
    worker.increment_failed_job_count(pipe)
    if entry.started_at and entry.ended_at:
        worker.increment_total_working_time(entry.ended_at - entry.started_at, pipe)
    if retry:
        retry_job(job, batch.queue, pipe, batch.clock.now())
    return retry


def retry_job(job: Job, queue: Queue, pipe: Pipeline, at: float) -> None:
    """RQ's `Job.retry`, with every write in the pipeline: RQ's writes a scheduled job's
    status at once, outside the transaction, which would abort it (it watches the jobs).
    The retry is due its interval after `at`, Redis's time (RQ's uses the host's), which
    whichever worker's scheduler compares with Redis's time."""
    interval = job.get_retry_interval()
    job.retries_left = int(job.retries_left or 0) - 1
    if interval:
        job.set_status(JobStatus.SCHEDULED, pipeline=pipe)
        queue.schedule_job(job, due_at(at, interval), pipeline=pipe)
    else:
        queue._enqueue_job(job, pipeline=pipe, at_front=job.enqueue_at_front_on_retry)


def put_back(pipe: Pipeline, worker: RQWorker, batch: Batch, entries: Sequence[Entry]) -> None:
    """Jobs whose handler never started go back to the head of the queue, in their order."""
    for entry in reversed(entries):
        job = entry.job
        assert entry.execution is not None  # only a begun job is settled
        cleanup_execution(_as_rqs(worker), job, pipe, entry.execution)
        job.set_status(JobStatus.QUEUED, pipeline=pipe)
        pipe.lpush(batch.queue.key, job.id)


def _as_rqs(worker: RQWorker) -> Any:
    """RQ's `cleanup_execution` takes its own worker class; given an execution, it reads
    only `executions` (pinned by `tests/test_rq_seams.py`)."""
    return worker
