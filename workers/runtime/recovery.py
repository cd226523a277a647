"""What a dead worker held, taken back by a live worker's maintenance, before RQ's own sweep.

A worker that dies (SIGKILL, OOM, a lost machine) may leave:
- a begun batch: its jobs in the started registry, their heartbeats running out after
  15 s. The child streamed each job's state as it went (`runner.py`): a job whose handler
  returned is settled as it ended; a job never started goes back to the head of the queue
  with no attempt counted; the job that was running is left to RQ's sweep, which counts
  its attempt and retries it at once (`retries.on_failure`);
- jobs taken but not yet begun (one round trip's window), in RQ's intermediate queue: back
  to the head of the queue once seen there twice, STUCK_SECONDS apart. RQ's own sweep of
  the intermediate queue would count them as failed attempts, a minute later.
It runs under RQ's maintenance lock, so one worker at a time does it.

After a Redis outage or failover, the worker process rebuilds its worker (`run.py`), and
what its previous incarnation held is known to be orphaned at once: `release_previous`
expires that incarnation's executions and drops a maintenance lock it left, so the new
worker's first maintenance (at its start) takes them back, rather than waiting for their
heartbeats to run out and for a lock left by the dead incarnation (RQ's lasts 15 minutes).
A job seen in the intermediate queue asks for the next maintenance as soon as its second
sighting is due (`recover` returns when), not a whole maintenance interval later.

"Expired" and "first seen" are by Redis's clock (`clock.py`), the one every worker wrote
them with, whichever worker's maintenance looks: a worker whose clock is behind or ahead
neither looks dead to the others nor takes theirs back early.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from redis import Redis
from rq import Queue
from rq.executions import WORKER_EXECUTIONS_KEY_TEMPLATE, Execution
from rq.job import Job, JobStatus
from rq.utils import now

from app.jobstate import PENDING, SUCCESS, EventStatus, UnreadableJob
from app.logs import log_state
from workers.runtime.batch import Batch, Entry, Fate
from workers.runtime.clock import RedisClock
from workers.runtime.outcomes import meta_of
from workers.runtime.rq_worker import RQWorker
from workers.runtime.settlement import settle_batch

STUCK_SECONDS = 5
FIRST_SEEN_KEPT = 24 * 3600  # as RQ's `set_first_seen`
PUT_BACK = """
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 1 then
  redis.call('LPUSH', KEYS[2], ARGV[1])
end
return 0
"""


def recover(worker: RQWorker, queue: Queue, clock: RedisClock | None = None) -> float | None:
    """Take back what dead workers held; returns in how many seconds a job seen once in
    the intermediate queue is due its second sighting, if any is."""
    clock = clock or RedisClock(queue.connection)
    recover_batches(worker, queue, clock)
    return recover_taken(queue, clock)


def release_previous(connection: Redis, queue: Queue, names: Iterable[str]) -> int:
    """Expire, in the started registry, the executions of this process's previous (dead)
    incarnations, and drop a maintenance lock one of them held. Returns how many."""
    registry = queue.started_job_registry
    released = 0
    for name in names:
        members = cast(set[bytes], connection.smembers(WORKER_EXECUTIONS_KEY_TEMPLATE.format(name)))
        if members:
            # XX: only executions still in the registry; score 0: expired now.
            expired: dict[bytes, float] = dict.fromkeys(members, 0)
            released += cast(int, connection.zadd(registry.key, expired, xx=True, ch=True))
        lock = cast(bytes | None, connection.get(queue.registry_cleaning_key))
        if lock is not None and lock.decode(errors="replace") == name:
            connection.delete(queue.registry_cleaning_key)
    return released


def recover_batches(worker: RQWorker, queue: Queue, clock: RedisClock) -> None:
    connection: Redis = queue.connection
    registry = queue.started_job_registry
    expired = cast(list[bytes], connection.zrangebyscore(registry.key, 0, clock.now()))
    executions = [Execution.from_composite_key(k.decode(), connection) for k in expired]
    jobs = Job.fetch_many([e.job_id for e in executions], connection=connection)
    batch, ended = Batch(queue), []
    batch.clock = clock
    for execution, job in zip(executions, jobs, strict=True):
        if job is None or job.get_status(refresh=False) != JobStatus.STARTED:
            continue  # RQ's sweep drops these leftovers
        entry = Entry(job, execution, started_at=job.started_at, ended_at=job.last_heartbeat)
        try:
            state = meta_of(job).state
        except UnreadableJob:
            continue  # not an event's job: RQ's sweep fails it
        if state in SUCCESS:
            ended.append(entry)
        elif state in PENDING - {EventStatus.RUNNING}:
            batch.entries.append(entry)
    if not ended and not batch.entries:
        return
    for entry in ended:
        entry.fate, entry.ended_at = Fate.SUCCEEDED, entry.ended_at or now()
    batch.entries += ended
    for entry in settle_batch(worker, batch):
        if entry.fate is Fate.NOT_STARTED:
            meta = meta_of(entry.job)
            log_state("requeued", *meta.labels, job_id=entry.job.id, by="recovery")


def recover_taken(queue: Queue, clock: RedisClock | None = None) -> float | None:
    clock = clock or RedisClock(queue.connection)
    taken = queue.intermediate_queue
    due: float | None = None
    for job_id in taken.get_job_ids():
        if job_id in queue.started_job_registry:
            continue
        first_seen = taken.get_first_seen(job_id)
        if first_seen is None:
            # RQ's `set_first_seen`, by Redis's clock (RQ's writes the host's).
            key = taken.get_first_seen_key(job_id)
            queue.connection.set(key, clock.now(), nx=True, ex=FIRST_SEEN_KEPT)
            due = STUCK_SECONDS
            continue
        age = clock.now() - first_seen.timestamp()
        if age >= STUCK_SECONDS:
            queue.connection.eval(PUT_BACK, 2, taken.key, queue.key, job_id)
            queue.connection.delete(taken.get_first_seen_key(job_id))
        else:
            due = min(due if due is not None else STUCK_SECONDS, STUCK_SECONDS - age)
    return due
