"""Workers whose clocks disagree: one runs under libfaketime 60 s behind (NTP trouble on one
host), the other on true time. Heartbeat expiries, the abandoned-job sweep, retry times and
the scheduler's due check all compare Redis's clock, so neither worker takes the other's
running jobs back, and a retry waits its interval, not the skew.

libfaketime comes from Debian's `faketime` package (.ci/run installs it); under CI=true
a missing one fails the tests, elsewhere it skips them.
"""

from __future__ import annotations

import glob
import json
import os
import signal
from collections.abc import Callable, Iterator

import pytest
from redis import Redis
from rq import Queue

from tests.processes import Process, Stack, effects, send, wait_until
from workers.dev.redis_server import RedisServer

SKEW = "-60s"
INTERVAL = 3  # the retry interval, far smaller than the skew


@pytest.fixture
def slow_clock() -> dict[str, str]:
    """The environment that puts a process (and what it forks) 60 s behind."""
    found = sorted(glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1"))
    if not found:
        if os.environ.get("CI") == "true":
            pytest.fail("libfaketime is missing: .ci/run installs Debian's faketime package")
        pytest.skip("libfaketime is not installed (apt-get install faketime): skew not tested")
    return {"LD_PRELOAD": found[0], "FAKETIME": SKEW, "FAKETIME_DONT_RESET": "1"}


def lines(*workers: Process) -> list[dict[str, object]]:
    found = []
    for worker in workers:
        for line in worker.output().splitlines():
            if line.startswith("{"):
                found.append(json.loads(line))
    return found


def test_a_worker_behind_the_others_keeps_its_batches_and_each_handler_runs_once(
    redis_server: RedisServer,
    redis: Redis,
    make_stack: Callable[..., Stack],
    slow_clock: dict[str, str],
) -> None:
    # Batches of two, so both workers run some; the true-time one sweeps every second.
    stack = make_stack(redis_server.url, WEBHOOK_BATCH_SIZE="2", WEBHOOK_MAINTENANCE_INTERVAL="1")
    web = stack.start("web")
    ids = [f"skew{i}" for i in range(10)]
    for event_id in ids:
        redis.set(f"sleep:{event_id}", 2)
        assert send(web.url, event_id, "order.slow").json()["status"] == "accepted"
    slow = stack.start("worker", **slow_clock)
    wait_until(lambda: redis.get(f"starts:{ids[0]}") == b"1", 30, "the slow worker's batch")
    fast = stack.start("worker")

    wait_until(lambda: all(effects(redis, e) >= 1 for e in ids), 60, "every effect")
    # Stopped, the workers settle what they hold and run nothing more: what follows is final.
    assert slow.stop() == 0 and fast.stop() == 0
    queue = Queue("webhooks", connection=redis)
    registries = (queue.started_job_registry, queue.scheduled_job_registry)
    assert [queue.count, *(r.get_job_count(cleanup=False) for r in registries)] == [0, 0, 0]
    assert [int(redis.get(f"starts:{e}") or 0) for e in ids] == [1] * len(ids)
    assert [effects(redis, e) for e in ids] == [1] * len(ids)
    records = lines(slow, fast)
    assert [r for r in records if r.get("by") == "recovery"] == []
    assert [r for r in records if "AbandonedJobError" in str(r.get("error", ""))] == []
    done = sorted(str(r["event_id"]) for r in records if r.get("state") == "done")
    assert done == sorted(ids)


def scheduler_running(redis: Redis) -> bool:
    """The scheduler that holds the queue's lock has started (RQ's scheduler registers its
    birth in its own process, once forked)."""
    holder = redis.get("rq:scheduler-lock:webhooks")
    return holder is not None and redis.hexists(b"rq:scheduler:" + holder, "pid")


@pytest.fixture
def frozen() -> Iterator[list[Process]]:
    """Workers a test stopped with SIGSTOP (their children still run): continued at the end."""
    stopped: list[Process] = []
    yield stopped
    for process in stopped:
        os.kill(process.popen.pid, signal.SIGCONT)


@pytest.mark.parametrize(
    "scheduler_behind", [True, False], ids=["slow-scheduler", "fast-scheduler"]
)
def test_a_retry_waits_its_interval_by_redis_clock_whichever_worker_schedules_it(
    redis_server: RedisServer,
    redis: Redis,
    make_stack: Callable[..., Stack],
    slow_clock: dict[str, str],
    frozen: list[Process],
    scheduler_behind: bool,
) -> None:
    stack = make_stack(redis_server.url, WEBHOOK_RETRY_INTERVALS=str(INTERVAL))
    web = stack.start("web")
    # The first worker holds the scheduler's lock; stopped (SIGSTOP), it takes no job, while
    # its scheduler (a child) goes on. The other worker runs the attempts and schedules the
    # retry with its own clock.
    holder = stack.start("worker", **(slow_clock if scheduler_behind else {}))
    # Its scheduler's process running, not only the lock taken: a SIGSTOP between RQ's taking
    # the lock and its forking the scheduler left the lock held and no scheduler for 61 s.
    wait_until(lambda: scheduler_running(redis), 30, "the scheduler")
    wait_until(lambda: redis.scard("rq:workers:webhooks") == 1, 30, "the first worker")
    os.kill(holder.popen.pid, signal.SIGSTOP)
    frozen.append(holder)
    runner = stack.start("worker", **({} if scheduler_behind else slow_clock))
    wait_until(lambda: redis.scard("rq:workers:webhooks") == 2, 30, "the second worker")

    assert send(web.url, "timed", "order.fails_first_timed").json()["status"] == "accepted"
    # The skew (60 s) is far longer than this wait: a due check on the skewed clock fails it.
    wait_until(lambda: redis.llen("attempt_times:timed") == 2, 30, "the retry")

    first, second = (float(t) for t in redis.lrange("attempt_times:timed", 0, -1))
    # Never early (the due time is rounded up to Redis's next whole second), and not
    # held back by the skew: the scheduler looks every second.
    assert INTERVAL <= second - first < INTERVAL + 10
    assert runner.popen.poll() is None
