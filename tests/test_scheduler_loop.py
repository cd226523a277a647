"""The scheduler's loop (`workers/runtime/scheduler.py`), run in the test's process for one
round: it closes the worker's ends of the batch child's pipes, and enqueues what is due."""

from __future__ import annotations

import os
from collections.abc import Callable
from types import SimpleNamespace

import pytest
from redis import Redis
from rq import Queue

from app.keys import job_id_for
from tests.conftest import Harness, make_due
from workers.runtime import scheduler as scheduler_module
from workers.runtime.scheduler import FollowingScheduler

pytestmark = pytest.mark.usefixtures("signals_kept")


def test_one_round_closes_the_inherited_pipe_and_enqueues_the_due_retry(
    make_harness: Callable[..., Harness], redis: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    harness = make_harness()
    harness.event("due")
    job_id = job_id_for("inbound", "due")
    queue = Queue("webhooks", connection=redis)
    make_due(redis, job_id)
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
