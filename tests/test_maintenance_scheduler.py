"""The worker's scheduler (`workers/runtime/maintenance.py`) in a burst run: `webhooks worker
--burst` moves the retries already due onto the queue, then leaves the scheduler's lock."""

from __future__ import annotations

from collections.abc import Callable

from redis import Redis
from rq import Queue
from rq.job import Job, JobStatus
from rq.registry import ScheduledJobRegistry

from app.keys import job_id_for
from tests.conftest import Harness, make_due
from workers.runtime.run import build_worker


def test_a_burst_run_enqueues_the_due_retries_and_releases_the_schedulers_lock(
    make_harness: Callable[..., Harness], redis: Redis
) -> None:
    harness = make_harness()
    harness.event("due")
    job_id = job_id_for("inbound", "due")
    queue = Queue("webhooks", connection=redis)
    make_due(redis, job_id)
    registry = ScheduledJobRegistry(queue=queue)
    worker = build_worker(harness.settings, redis)

    worker._start_scheduler(burst=True)  # what RQ's `work(burst=True, with_scheduler=True)` calls

    assert queue.job_ids == [job_id] and registry.count == 0
    assert Job.fetch(job_id, connection=redis).get_status() == JobStatus.QUEUED
    assert redis.keys("rq:scheduler-lock:*") == []
