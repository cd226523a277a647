"""Every time one worker writes and another compares is Redis's (`workers/runtime/clock.py`):
here the host's clock, as RQ reads it (`current_timestamp`), is moved an hour for one side
only, in one process; `tests/faults/test_clock_skew.py` runs two real worker processes on
clocks 60 s apart."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
import rq.executions
import rq.intermediate_queue
import rq.registry
import rq.scheduler
import rq.utils
from redis import Redis
from rq import Queue
from rq.registry import BaseRegistry, clean_registries

from tests.conftest import Harness
from workers.runtime import batch as batches
from workers.runtime import recovery
from workers.runtime.clock import RedisClock
from workers.runtime.run import build_worker
from workers.runtime.scheduler import FollowingScheduler
from workers.runtime.sweep import sweep
from workers.runtime.take import take

HOUR = 3600


def host_clock(monkeypatch: pytest.MonkeyPatch, skew: int) -> None:
    """This process's clock, as RQ (and code that borrowed RQ's) reads it, `skew` s off."""
    skewed = lambda: int(time.time()) + skew  # noqa: E731
    for module in (rq.utils, rq.registry, rq.executions, rq.scheduler, batches, recovery):
        monkeypatch.setattr(module, "current_timestamp", skewed, raising=False)


@pytest.mark.parametrize(
    ("beginner", "sweeper"), [(0, HOUR), (-HOUR, 0)], ids=["sweeper-ahead", "runner-behind"]
)
def test_a_running_batch_is_not_taken_back_by_a_worker_on_another_clock(
    make_harness: Callable[..., Harness],
    redis: Redis,
    monkeypatch: pytest.MonkeyPatch,
    beginner: int,
    sweeper: int,
) -> None:
    harness = make_harness()
    harness.event("c1")
    harness.event("c2")
    runner = build_worker(harness.settings, redis)
    host_clock(monkeypatch, beginner)
    batch = take(redis, runner.queues[0], 10, None)
    assert batch is not None
    with redis.pipeline() as pipe:
        batches.begin_executions(pipe, runner, batch, runner.batch_ttl(batch))
        pipe.execute()
    with redis.pipeline() as pipe:
        batches.heartbeat(pipe, batch, runner.batch_ttl(batch))
        pipe.execute()
    running = set(redis.zrange(batch.started.key, 0, -1))
    assert len(running) == 2

    host_clock(monkeypatch, sweeper)
    build_worker(harness.settings, redis).clean_registries()  # another worker's maintenance

    assert set(redis.zrange(batch.started.key, 0, -1)) == running
    assert Queue("webhooks", connection=redis).job_ids == []


def test_the_scheduler_finds_what_is_due_by_redis_clock(
    make_harness: Callable[..., Harness], redis: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    harness = make_harness()
    queue = Queue("webhooks", connection=redis)
    harness.event("due")
    harness.event("later")
    due, later = queue.job_ids
    redis.delete(queue.key)
    now = RedisClock(redis).read()
    redis.zadd(queue.scheduled_job_registry.key, {due: int(now) - 1, later: int(now) + 600})
    scheduler = FollowingScheduler([queue], connection=redis, settings=harness.settings)
    scheduler.acquire_locks()  # type: ignore[no-untyped-call]
    try:
        for skew in (-HOUR, HOUR):  # behind: nothing would be due; ahead: both would be
            host_clock(monkeypatch, skew)
            scheduler.enqueue_scheduled_jobs()  # type: ignore[no-untyped-call]
            assert queue.job_ids == [due]
            assert queue.scheduled_job_registry.get_job_ids(cleanup=False) == [later]
    finally:
        scheduler.release_locks()  # type: ignore[no-untyped-call]


def test_a_retry_is_due_its_interval_after_redis_time_rounded_up(
    make_harness: Callable[..., Harness], redis: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    harness = make_harness(webhook_retry_intervals="30", webhook_max_retries=1)
    harness.event("r1")
    queue = Queue("webhooks", connection=redis)
    job = queue.fetch_job(queue.job_ids[0])
    assert job is not None
    redis.delete(queue.key)
    host_clock(monkeypatch, -HOUR)
    at = RedisClock(redis).read()
    with redis.pipeline() as pipe:
        batches.retry_job(job, queue, pipe, at)
        pipe.execute()
    score = redis.zscore(queue.scheduled_job_registry.key, job.id)
    assert score is not None and at + 30 <= score < at + 31


def test_the_sweep_cleans_up_the_registries_rqs_clean_registries_cleans(
    redis: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`sweep.py` is RQ's `clean_registries` with Redis's time for a cutoff."""
    cleaned: list[tuple[str, float | None]] = []

    def recorder(name: str) -> Callable[..., None]:
        def cleanup(self: BaseRegistry, timestamp: float | None = None, **_: object) -> None:
            cleaned.append((name, timestamp))

        return cleanup

    classes = [c for c in vars(rq.registry).values() if isinstance(c, type)]
    for registry_class in classes:
        if issubclass(registry_class, BaseRegistry) and "cleanup" in vars(registry_class):
            monkeypatch.setattr(registry_class, "cleanup", recorder(registry_class.__name__))
    queue = Queue("seams-sweep", connection=redis)
    clean_registries(queue)
    rqs = [name for name, _ in cleaned]
    cleaned.clear()
    sweep(queue, None, 1234.5)
    assert [name for name, _ in cleaned] == rqs
    assert {at for _, at in cleaned} == {1234.5}


def test_a_job_first_seen_in_the_intermediate_queue_by_a_worker_behind_is_not_put_back_early(
    make_harness: Callable[..., Harness], redis: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    harness = make_harness()
    harness.event("t1")
    queue = Queue("webhooks", connection=redis)
    redis.lmove(queue.key, queue.intermediate_queue_key, "LEFT", "RIGHT")  # taken, not begun
    behind = lambda: datetime.now(UTC) - timedelta(seconds=HOUR)  # noqa: E731
    for module in (rq.intermediate_queue, recovery):
        monkeypatch.setattr(module, "now", behind)
    assert recovery.recover_taken(queue) == recovery.STUCK_SECONDS  # its first sighting
    monkeypatch.undo()

    due = recovery.recover_taken(queue)  # the next look, at once, by a worker on true time

    assert due is not None and 0 < due <= recovery.STUCK_SECONDS
    assert redis.llen(queue.intermediate_queue_key) == 1 and queue.job_ids == []
