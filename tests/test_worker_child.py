"""The worker and its batch child (`workers/runtime/worker.py`): a cold shutdown takes the child
down, a child stuck past its job's deadline is killed, and a dead child's running job fails."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from redis import Redis
from rq.utils import now

from tests.conftest import Harness
from tests.processes import wait_until
from workers.runtime import batch as batches
from workers.runtime.batch import Batch, Fate
from workers.runtime.job_ends import child_died
from workers.runtime.run import build_worker
from workers.runtime.take import take
from workers.runtime.worker import WebhookWorker


def is_zombie(pid: int) -> bool:
    return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


def killed_by(pid: int) -> int:
    """The signal that ended the child (waited for, not assumed), once it has ended."""
    wait_until(lambda: is_zombie(pid), 10, "the child to end")
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status)
    return os.WTERMSIG(status)


@pytest.fixture
def worker(make_harness: Callable[..., Harness], redis: Redis) -> Iterator[WebhookWorker]:
    """A forking worker, with one event queued, and its child started and waiting."""
    harness = make_harness(webhook_worker_mode="fork")
    harness.event("k0")
    worker = build_worker(harness.settings, redis)
    worker.horse.ensure()
    worker._horse_pid = worker.horse.pid  # as `run_in_horse` tells RQ
    yield worker
    if worker.horse.pid:
        worker.horse.forget()


@pytest.fixture
def begun(worker: WebhookWorker, redis: Redis) -> Batch:
    """The queued event taken and begun by the worker, as `execute_job` begins it."""
    batch = take(redis, worker.queues[0], 10, None)
    assert batch is not None
    with redis.pipeline() as pipe:
        batches.begin_executions(pipe, worker, batch, worker.batch_ttl(batch))
        pipe.execute()
    return batch


def test_a_second_stop_signal_kills_the_batch_child_with_the_worker(
    worker: WebhookWorker, monkeypatch: pytest.MonkeyPatch
) -> None:
    child = worker.horse.pid
    # The first Ctrl+C was over a second ago (RQ ignores a second one within a second).
    worker._shutdown_requested_date = now() - timedelta(seconds=2)
    monkeypatch.setattr(worker, "wait_for_horse", lambda: (None, None, None))  # reaped below

    with pytest.raises(SystemExit):
        worker.request_force_stop(signal.SIGINT, None)  # RQ's cold shutdown

    assert killed_by(child) == signal.SIGKILL


def test_a_child_stuck_past_its_jobs_deadline_is_killed_at_the_next_heartbeat(
    worker: WebhookWorker, begun: Batch
) -> None:
    child = worker.horse.pid
    running = begun.entries[0]
    timeout = running.job.timeout
    assert timeout is not None
    # Its handler ignored the death penalty (it caught the timeout, or never returns to
    # Python): a minute after the job's own timeout, the worker ends it.
    running.started_at = now() - timedelta(seconds=timeout + 61)

    worker.keep_alive(begun)

    assert killed_by(child) == signal.SIGKILL


def test_a_child_dying_under_a_job_deleted_while_it_ran_fails_the_job_as_reported(
    worker: WebhookWorker, begun: Batch, redis: Redis
) -> None:
    running = begun.entries[0]
    running.started_at = now()
    reported = dict(running.job.meta)
    redis.delete(running.job.key)  # `rq job delete` while its handler ran

    child_died(worker.connection, begun, signal.SIGKILL)  # waitpid's status of a SIGKILLed child

    assert running.fate is Fate.FAILED and running.ended_at is not None
    assert running.job.meta == reported
    assert running.exc_string == (
        "Work-horse terminated unexpectedly; waitpid returned 9 (signal 9)"
    )
