"""Taking a batch: up to WEBHOOK_BATCH_SIZE jobs off the queue in one round trip.

A job is moved as RQ's own dequeue moves it (to the intermediate queue, where a worker that
dies before beginning the batch leaves it for recovery), and its hash comes back with it.
A job whose hash RQ cannot read goes to the failed registry at once: it must not stop the
jobs behind it.
"""

from __future__ import annotations

from datetime import UTC, datetime

from redis import Redis
from rq import Queue
from rq.defaults import DEFAULT_FAILURE_TTL
from rq.job import Job, JobStatus
from rq.utils import current_timestamp, now, utcformat

from app.logs import logger
from workers.runtime.batch import Batch, Entry

# RQ's, which follows the process's RQ_KEY_PREFIX.
JOB_PREFIX = Job.redis_job_namespace_prefix

# Moves up to ARGV[1] job ids from the queue to RQ's intermediate queue, as RQ's own
# dequeue does one at a time (LMOVE queue intermediate LEFT RIGHT), and returns each id
# with its job hash: no second round trip to fetch them. Last comes Redis's `TIME`, the
# clock the batch's expiries and retry times are computed from (`clock.py`); a script may
# call it before writing since Redis 5 (scripts replicate their effects, not themselves).
# ARGV[2] is RQ's job key prefix: `rq:job:`, or a shard's under its RQ_KEY_PREFIX.
TAKE = """
local taken = {}
for i = 1, tonumber(ARGV[1]) do
  local id = redis.call('LMOVE', KEYS[1], KEYS[2], 'LEFT', 'RIGHT')
  if not id then break end
  taken[#taken + 1] = id
  taken[#taken + 1] = redis.call('HGETALL', ARGV[2] .. id)
end
taken[#taken + 1] = redis.call('TIME')
return taken
"""


def take(connection: Redis, queue: Queue, limit: int, block: int | None) -> Batch | None:
    """Up to `limit` jobs, without waiting when there are any; else wait up to `block`
    seconds for one (None: do not wait). A lone event is never held back for a batch."""
    found = connection.eval(TAKE, 2, queue.key, queue.intermediate_queue_key, limit, JOB_PREFIX)
    reading = found.pop()
    if not found and block:
        first = connection.blmove(queue.key, queue.intermediate_queue_key, block, "LEFT", "RIGHT")
        if first is None:
            return None
        first_id = first.decode() if isinstance(first, bytes) else str(first)
        fields = connection.hgetall(Job.key_for(first_id))
        found = [first, [item for pair in fields.items() for item in pair]]
        found += connection.eval(
            TAKE, 2, queue.key, queue.intermediate_queue_key, limit - 1, JOB_PREFIX
        )
        reading = found.pop()
    if not found:
        return None
    batch = Batch(queue)
    batch.clock.anchor(reading)
    gone = []
    for job_id, fields in zip(found[::2], found[1::2], strict=True):
        if not fields:
            gone.append(job_id)  # deleted while queued; RQ's dequeue skips these too
            continue
        mapping = dict(zip(fields[::2], fields[1::2], strict=True))
        try:
            job = read_job(job_id.decode(), mapping, connection)
        except Exception as exc:  # a damaged hash must not stop the jobs behind it
            fail_unreadable(connection, queue, job_id.decode(), type(exc).__name__)
            continue
        batch.entries.append(Entry(job, fields=mapping))
    for job_id in gone:
        connection.lrem(queue.intermediate_queue_key, 1, job_id)
    return batch if batch.entries else None


# The dates every queued job has. RQ writes them in ISO 8601 (with a Z) and reads them
# back with strptime, a twentieth of a no-op job; `fromisoformat` reads them alike.
_DATES = (b"created_at", b"enqueued_at")


def read_job(job_id: str, fields: dict[bytes, bytes], connection: Redis) -> Job:
    """The job as RQ's `Job.restore` reads it from its hash (a test compares the two)."""
    # serializer=None: RQ's default, without re-checking its protocol for every job.
    job = Job(job_id, connection=connection)
    job.restore({name: value for name, value in fields.items() if name not in _DATES})
    for name in _DATES:
        if value := fields.get(name):
            when = datetime.fromisoformat(value.decode())
            if when.tzinfo is None:
                raise ValueError(f"{name.decode()} has no time zone")
            setattr(job, name.decode(), when.astimezone(UTC))
    return job


def fail_unreadable(connection: Redis, queue: Queue, job_id: str, error: str) -> None:
    """A job whose hash RQ cannot read goes to the failed registry as it is, for an
    operator to look at: what RQ's failure path would write, without a `Job` to write it."""
    reason = f"UnreadableJob: its hash cannot be read ({error})"
    with connection.pipeline() as pipe:
        pipe.hset(
            Job.key_for(job_id),
            mapping={"status": JobStatus.FAILED.value, "ended_at": utcformat(now())},
        )
        pipe.zadd(
            queue.failed_job_registry.key, {job_id: current_timestamp() + DEFAULT_FAILURE_TTL}
        )
        pipe.lrem(queue.intermediate_queue_key, 1, job_id)
        pipe.execute()
    logger.error(
        "a job that is not a webhook event's was moved to the failed registry",
        extra={"job_id": job_id, "error": reason},
    )
