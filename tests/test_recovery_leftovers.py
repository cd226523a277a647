"""Maintenance's recovery (`workers/runtime/recovery.py`) leaves to RQ's own sweep what is not
an event's to settle, and leaves a job taken from the queue alone while it is due no look."""

from __future__ import annotations

import pickle
from collections.abc import Callable

import pytest
from redis import Redis
from rq import Queue
from rq.job import Job
from rq.registry import FailedJobRegistry, StartedJobRegistry

from app.keys import job_id_for
from tests.conftest import Harness
from tests.test_rq_seams import abandon, ledger_status
from workers.runtime import recovery
from workers.runtime.run import build_worker


@pytest.fixture
def harness(make_harness: Callable[..., Harness]) -> Harness:
    return make_harness(webhook_max_retries=2)


def test_an_abandoned_job_whose_meta_is_damaged_is_failed_by_rqs_sweep(
    make_harness: Callable[..., Harness], redis: Redis
) -> None:
    harness = make_harness(webhook_max_retries=0)
    harness.event("dmg")
    job_id = job_id_for("inbound", "dmg")
    abandon(redis, job_id)  # its worker was SIGKILLed mid-batch
    redis.hset(Job.key_for(job_id), "meta", pickle.dumps({"x": 1}))
    worker = build_worker(harness.settings, redis)

    worker.clean_registries()  # the worker's maintenance: our recovery, then RQ's sweep

    assert job_id in FailedJobRegistry("webhooks", connection=redis)
    assert Queue("webhooks", connection=redis).job_ids == []
    # There is no event to account for: its ledger record stays as it was.
    assert ledger_status(redis, "dmg") == "queued"


def test_an_expired_execution_of_a_deleted_job_is_only_dropped(
    harness: Harness, redis: Redis
) -> None:
    harness.event("gone")
    job_id = job_id_for("inbound", "gone")
    abandon(redis, job_id)
    redis.delete(Job.key_for(job_id))  # `rq job delete` after its worker died
    worker = build_worker(harness.settings, redis)

    worker.clean_registries()

    assert StartedJobRegistry("webhooks", connection=redis).count == 0
    assert Queue("webhooks", connection=redis).job_ids == []
    assert job_id not in FailedJobRegistry("webhooks", connection=redis)


def test_a_job_taken_again_while_an_execution_of_it_runs_is_left_to_that_execution(
    harness: Harness, redis: Redis
) -> None:
    harness.event("twice")
    job_id = job_id_for("inbound", "twice")
    queue = Queue("webhooks", connection=redis)
    redis.lmove(queue.key, queue.intermediate_queue_key, "LEFT", "RIGHT")
    redis.zadd(queue.started_job_registry.key, {f"{job_id}:exec-1": 4_000_000_000})

    for _ in range(2):
        assert recovery.recover_taken(queue) is None

    assert queue.job_ids == []
    assert redis.lrange(queue.intermediate_queue_key, 0, -1) == [job_id.encode()]


def test_a_job_seen_once_in_the_intermediate_queue_is_due_its_second_look_later(
    harness: Harness, redis: Redis
) -> None:
    harness.event("taken")
    queue = Queue("webhooks", connection=redis)
    # Taken by a worker that died before it began the batch.
    redis.lmove(queue.key, queue.intermediate_queue_key, "LEFT", "RIGHT")

    first = recovery.recover_taken(queue)
    second = recovery.recover_taken(queue)

    assert first == recovery.STUCK_SECONDS
    assert second is not None and 0 < second <= recovery.STUCK_SECONDS
    assert queue.job_ids == []  # not put back before it is due
