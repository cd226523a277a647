"""Running a batch (`workers/runtime/runner.py`): a warm stop mid-batch starts no further
handler, and the batch's deadline ignores an alarm that is not a timeout."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

import pytest
from redis import Redis
from rq import Queue
from rq.job import Job, JobStatus

from app.keys import job_id_for
from tests.conftest import Harness
from workers import Event, handler
from workers.runtime.deadline import Deadline
from workers.runtime.run import build_worker
from workers.runtime.settlement import settle_batch
from workers.runtime.take import take

pytestmark = pytest.mark.usefixtures("signals_kept")


def test_a_warm_stop_mid_batch_puts_the_unstarted_jobs_back_at_the_head_of_the_queue(
    make_harness: Callable[..., Harness], redis: Redis
) -> None:
    harness = make_harness(webhook_worker_mode="simple")
    worker = build_worker(harness.settings, redis)
    ran: list[str] = []

    @handler("inbound", "order.created")
    def stopped_during(event: Event) -> None:
        ran.append(event.id)
        worker.request_stop(signal.SIGTERM, None)  # SIGTERM while this handler runs

    for n in range(3):
        harness.event(f"m{n}")
    ids = [job_id_for("inbound", f"m{n}") for n in range(3)]
    queue = worker.queues[0]
    batch = take(redis, queue, 10, None)
    assert batch is not None
    worker._batch = batch
    worker.execute_job(batch.entries[0].job, queue)
    settle_batch(worker, batch)

    assert ran == ["m0"]
    assert Job.fetch(ids[0], connection=redis).get_status() == JobStatus.FINISHED
    assert Queue("webhooks", connection=redis).job_ids == ids[1:]
    for job_id in ids[1:]:
        job = Job.fetch(job_id, connection=redis)
        assert job.get_status() == JobStatus.QUEUED and job.meta.get("attempts", 0) == 0


def test_an_alarm_between_jobs_raises_nothing() -> None:
    with Deadline() as deadline:
        deadline.start(30)
        deadline.cancel()
        os.kill(os.getpid(), signal.SIGALRM)  # an alarm that went off as the job ended
        assert deadline.deadline is None
        assert signal.getitimer(signal.ITIMER_REAL)[0] == 0


def test_an_early_alarm_not_ours_sets_the_timer_again_for_the_jobs_deadline() -> None:
    with Deadline() as deadline:
        deadline.start(30)
        signal.setitimer(signal.ITIMER_REAL, 0)  # a handler's own timer replaced ours...
        os.kill(os.getpid(), signal.SIGALRM)  # ...and went off, long before the deadline
        left = signal.getitimer(signal.ITIMER_REAL)[0]
        assert deadline.deadline is not None and deadline.deadline > time.monotonic()
        assert left > 0  # armed again for what is left of the job's 30 s
