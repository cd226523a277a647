"""A batch interrupted: its child killed, or its worker and child killed together. The job
that was running counts an attempt; the others are done exactly once, promptly."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable

import pytest
from redis import Redis
from rq import Queue
from rq.job import Job

from app.keys import job_id_for
from tests.processes import Process, Stack, effects, send, wait_until
from workers.dev.redis_server import RedisServer

EVENTS = [("b1", "order.created"), ("b2", "order.slow"), ("b3", "order.created"),
          ("b4", "order.created")]  # fmt: skip


def attempts(redis: Redis, event_id: str) -> int:
    return int(Job.fetch(job_id_for("inbound", event_id), connection=redis).meta["attempts"])


def batch_child(worker: Process) -> int:
    """The worker's child running the batch: it leads its own process group."""
    found = [pid for pid in worker.children() if os.getpgid(pid) == pid]
    assert len(found) == 1, found
    return found[0]


@pytest.fixture
def queued_batch(
    redis_server: RedisServer, redis: Redis, make_stack: Callable[..., Stack]
) -> Stack:
    """Four events queued before any worker runs, so one worker takes them as one batch;
    the second one's handler runs until the test lets it go."""
    stack = make_stack(redis_server.url)
    web = stack.start("web")
    redis.set("sleep:b2", 120)
    for event_id, event_type in EVENTS:
        assert send(web.url, event_id, event_type).json()["status"] == "accepted"
    return stack


def test_a_child_killed_mid_batch_fails_the_running_job_and_requeues_the_rest(
    queued_batch: Stack, redis: Redis
) -> None:
    worker = queued_batch.start("worker")
    wait_until(lambda: redis.get("starts:b2") == b"1", 30, "the slow job to start")
    assert effects(redis, "b1") == 1 and effects(redis, "b3") == 0
    redis.set("sleep:b2", 0.1)  # its retry returns at once

    os.kill(batch_child(worker), signal.SIGKILL)

    wait_until(lambda: all(effects(redis, e) == 1 for e, _ in EVENTS), 30, "every effect")
    assert [attempts(redis, e) for e, _ in EVENTS] == [1, 2, 1, 1]
    assert "Work-horse terminated unexpectedly" in worker.output()


def test_a_killed_workers_batch_is_recovered_with_one_attempt_counted(
    queued_batch: Stack, redis: Redis
) -> None:
    first = queued_batch.start("worker")
    wait_until(lambda: redis.get("starts:b2") == b"1", 30, "the slow job to start")
    assert effects(redis, "b1") == 1
    redis.set("sleep:b2", 0.1)
    queued_batch.start("worker")

    first.kill_hard()  # the worker, its batch's child and its scheduler, all SIGKILLed

    wait_until(lambda: all(effects(redis, e) == 1 for e, _ in EVENTS), 60, "every effect")
    # b1 had returned: settled from what its child streamed, not run again. b2 was running:
    # one attempt more. b3 and b4 never started: no attempt counted before they ran.
    assert [attempts(redis, e) for e, _ in EVENTS] == [1, 2, 1, 1]
    assert [effects(redis, e) for e, _ in EVENTS] == [1, 1, 1, 1]


def settled_lines(*workers: Process) -> list[tuple[str, str]]:
    """(event id, state) of every settled line the workers printed."""
    found = []
    for worker in workers:
        for line in worker.output().splitlines():
            if line.startswith("{") and '"event_id"' in line:
                record = json.loads(line)
                if record.get("state") in {"done", "ignored", "retry_scheduled", "dead_lettered"}:
                    found.append((record["event_id"], record["state"]))
    return sorted(found)


@pytest.mark.parametrize("mode", ["fork", "simple"])
def test_a_batch_longer_than_the_heartbeat_expiry_runs_and_settles_each_event_once(
    redis_server: RedisServer, redis: Redis, make_stack: Callable[..., Stack], mode: str
) -> None:
    # 18 handlers of 1 s in one batch: 18 s, past the 15 s a missed heartbeat is tolerated,
    # with reports flowing all along; a second worker's maintenance sweeps meanwhile.
    stack = make_stack(redis_server.url, WEBHOOK_WORKER_MODE=mode, WEBHOOK_MAINTENANCE_INTERVAL="2")
    web = stack.start("web")
    ids = [f"long{i:02}" for i in range(18)]
    for event_id in ids:
        redis.set(f"sleep:{event_id}", 1)
        assert send(web.url, event_id, "order.slow").json()["status"] == "accepted"
    first = stack.start("worker")
    wait_until(lambda: redis.get(f"starts:{ids[0]}") == b"1", 30, "the batch to start")
    second = stack.start("worker")

    wait_until(lambda: all(effects(redis, e) >= 1 for e in ids), 60, "every effect")
    wait_until(lambda: {e for e, _ in settled_lines(first, second)} == set(ids), 30, "settles")
    # Stopped, the workers settle what they hold and run nothing more: what follows is final,
    # and a second run that had not come yet would still be waiting in one of the queue's
    # lists, or have counted its attempt.
    assert first.stop() == 0 and second.stop() == 0
    queue = Queue("webhooks", connection=redis)
    registries = (queue.started_job_registry, queue.scheduled_job_registry)
    assert [queue.count, *(r.get_job_count(cleanup=False) for r in registries)] == [0, 0, 0]
    assert [attempts(redis, e) for e in ids] == [1] * len(ids)
    assert [effects(redis, e) for e in ids] == [1] * len(ids)
    assert [int(redis.get(f"starts:{e}") or 0) for e in ids] == [1] * len(ids)
    assert settled_lines(first, second) == [(e, "done") for e in ids]
