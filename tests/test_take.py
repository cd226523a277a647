"""Taking a batch (`workers/runtime/take.py`): a job whose hash is gone or damaged must not
stop the jobs behind it."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from redis import Redis
from rq import Queue
from rq.job import Job, JobStatus
from rq.registry import FailedJobRegistry

from app.keys import job_id_for
from tests.conftest import Harness
from workers.runtime.take import read_job, take


@pytest.fixture
def queued(make_harness: Callable[..., Harness], redis: Redis) -> list[str]:
    """Three events accepted by the receiver, queued for the worker; their job ids."""
    harness = make_harness()
    for n in range(3):
        assert harness.event(f"t{n}").json()["status"] == "accepted"
    return [job_id_for("inbound", f"t{n}") for n in range(3)]


def test_a_job_deleted_while_queued_is_dropped_and_the_jobs_behind_it_are_taken(
    queued: list[str], redis: Redis
) -> None:
    queue = Queue("webhooks", connection=redis)
    redis.delete(Job.key_for(queued[0]))  # `rq job delete`, an expiry: the id stays queued

    batch = take(redis, queue, 10, None)

    assert batch is not None and [e.job.id for e in batch.entries] == queued[1:]
    # Only the taken jobs are left on the intermediate queue, for recovery.
    assert [i.decode() for i in redis.lrange(queue.intermediate_queue_key, 0, -1)] == queued[1:]


def test_a_queue_of_deleted_jobs_only_gives_no_batch_and_keeps_nothing(
    queued: list[str], redis: Redis
) -> None:
    queue = Queue("webhooks", connection=redis)
    redis.delete(*[Job.key_for(i) for i in queued])

    assert take(redis, queue, 10, None) is None
    assert redis.llen(queue.key) == redis.llen(queue.intermediate_queue_key) == 0


@pytest.mark.parametrize(
    "damage",
    [
        # A late write (a heartbeat, a status) re-created a deleted job's hash: no `data`.
        {"data": None},
        # A date written by something other than RQ, without a time zone.
        {"created_at": "2026-11-30T08:00:00"},
    ],
    ids=["no-data", "naive-date"],
)
def test_an_unreadable_job_goes_to_the_failed_registry_and_the_jobs_behind_it_are_taken(
    queued: list[str],
    redis: Redis,
    capfd: pytest.CaptureFixture[str],
    damage: dict[str, str | None],
) -> None:
    queue = Queue("webhooks", connection=redis)
    bad = queued[0]
    for field, value in damage.items():
        if value is None:
            redis.hdel(Job.key_for(bad), field)
        else:
            redis.hset(Job.key_for(bad), field, value)

    batch = take(redis, queue, 10, None)

    assert batch is not None and [e.job.id for e in batch.entries] == queued[1:]
    assert bad in FailedJobRegistry(queue=queue)
    assert redis.hget(Job.key_for(bad), "status") == JobStatus.FAILED.value.encode()
    assert bad.encode() not in redis.lrange(queue.intermediate_queue_key, 0, -1)
    err = capfd.readouterr().err
    assert "not a webhook event's was moved to the failed registry" in err
    assert "UnreadableJob: its hash cannot be read" in err


def test_a_job_without_an_enqueued_at_reads_as_rqs_restore_reads_it(
    queued: list[str], redis: Redis
) -> None:
    """RQ writes an empty `enqueued_at` for a job never enqueued; reading it is not an error."""
    fields = redis.hgetall(Job.key_for(queued[0]))
    fields[b"enqueued_at"] = b""
    rqs = Job(queued[0], connection=redis)
    rqs.restore(fields)

    ours = read_job(queued[0], fields, redis)

    assert ours.enqueued_at is None
    assert vars(ours) == vars(rqs)
