"""The scheduler's loop (`workers/runtime/scheduler.py`), run in the test's process for one
round: it closes the worker's ends of the batch child's pipes, and enqueues what is due."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from types import SimpleNamespace

import pytest
from redis import Redis
from rq import Queue
from rq.job import Job, JobStatus
from rq.registry import ScheduledJobRegistry

from app.keys import job_id_for
from tests.conftest import Harness
from workers.runtime import scheduler as scheduler_module
from workers.runtime.scheduler import FollowingScheduler


@pytest.fixture(autouse=True)
def _signals_kept() -> Iterator[None]:
    """The scheduler installs its SIGTERM and SIGINT handlers: put them back."""
    kept = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    yield
    for signum, previous in kept.items():
        signal.signal(signum, previous)


def test_one_round_closes_the_inherited_pipe_and_enqueues_the_due_retry(
    make_harness: Callable[..., Harness], redis: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    harness = make_harness()
    harness.event("due")
    job_id = job_id_for("inbound", "due")
    queue = Queue("webhooks", connection=redis)
    redis.lrem(queue.key, 0, job_id)
    Job.fetch(job_id, connection=redis).set_status(JobStatus.SCHEDULED)
    redis.zadd(ScheduledJobRegistry(queue=queue).key, {job_id: 1})
    child_end, workers_end = os.pipe()  # the worker's end of a pipe to its batch child
    os.set_blocking(child_end, False)  # a pipe still held open fails the read, not hangs it
    scheduler = FollowingScheduler(
        [queue],
        connection=redis,
        settings=harness.settings,
        name="s1",
        inherited_fds=lambda: (workers_end,),
    )
    scheduler.acquire_locks()  # as the worker does before it starts the scheduler
    assert scheduler.acquired_locks

    def after_one_round(seconds: float) -> None:
        scheduler._stop_requested = True

    monkeypatch.setattr(scheduler_module, "time", SimpleNamespace(sleep=after_one_round))
    try:
        scheduler.work()
        # The child sees its task pipe end: nobody else holds the worker's end open.
        assert os.read(child_end, 1) == b""
    finally:
        os.close(child_end)
    assert queue.job_ids == [job_id]
    assert redis.keys("rq:scheduler-lock:*") == []  # released as it stopped
