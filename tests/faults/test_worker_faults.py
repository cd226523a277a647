"""Workers killed, stopped and replaced under load: every accepted event handled, once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest
from redis import Redis
from rq.job import Job

from app.keys import Keys, job_id_for
from tests.conftest import SECRET, event_body, sign
from tests.processes import Process, Stack, effects, send, wait_until
from workers.dev.redis_server import RedisServer
from workers.ops.ledger import EventLedger

LOAD_SECONDS = float(os.environ.get("FAULT_LOAD_SECONDS", "40"))
# A steady rate one forking worker keeps up with, so the test measures loss, not backlog.
LOAD_RATE = 25.0
SENDERS = 2


def starts(redis: Redis, event_id: str) -> int:
    return int(redis.get(f"starts:{event_id}") or 0)


def test_a_job_whose_worker_was_killed_is_retried_by_another_within_60_seconds(
    redis_server: RedisServer, redis: Redis, make_stack: Callable[..., Stack]
) -> None:
    stack = make_stack(redis_server.url)
    web, first = stack.start("web"), stack.start("worker")
    redis.set("sleep:evt_k", 60)
    assert send(web.url, "evt_k", "order.slow").json()["status"] == "accepted"
    wait_until(lambda: starts(redis, "evt_k") == 1, 30, "the first attempt to start")
    stack.start("worker")
    time.sleep(1)

    first.kill_hard()  # the worker, its work-horse and its scheduler, all SIGKILLed
    killed_at = time.monotonic()
    redis.set("sleep:evt_k", 0.1)
    wait_until(lambda: starts(redis, "evt_k") == 2, 60, "another worker to retry the job")
    assert time.monotonic() - killed_at < 60
    wait_until(lambda: effects(redis, "evt_k") == 1, 30, "the retried job to finish")
    job = Job.fetch(job_id_for("inbound", "evt_k"), connection=redis)
    assert job.meta["attempts"] == 2  # the killed attempt counts
    assert job.retries_left == 4


def test_a_worker_killed_between_two_handlers_reruns_only_the_one_that_was_running(
    redis_server: RedisServer, redis: Redis, make_stack: Callable[..., Stack]
) -> None:
    """The at-least-once window docs/handlers.md states: a handler that finished before the kill
    (its success written at once, as another handler follows) never runs again; the one
    that was running runs again; the one after it runs once."""
    stack = make_stack(redis_server.url)
    web, first = stack.start("web"), stack.start("worker")
    redis.set("sleep:evt_f", 60)
    assert send(web.url, "evt_f", "order.fanout").json()["status"] == "accepted"
    wait_until(lambda: starts(redis, "evt_f") == 1, 30, "the middle handler to start")
    assert count(redis, "effects:first:evt_f") == 1
    stack.start("worker")
    time.sleep(1)

    first.kill_hard()
    redis.set("sleep:evt_f", 0)
    ledger = EventLedger(Keys("webhook", "webhooks"), redis)

    def settled() -> bool:
        found = ledger.get("inbound", "evt_f")
        return found is not None and found.status == "done"

    wait_until(settled, 60, "the retry to settle")
    assert count(redis, "effects:first:evt_f") == 1
    assert count(redis, "effects:last:evt_f") == 1
    assert (starts(redis, "evt_f"), effects(redis, "evt_f")) == (2, 1)
    record = ledger.get("inbound", "evt_f")
    assert record is not None and record.attempts == 2
    killed, retry = record.attempt_log
    assert [(t.handler, str(t.state)) for t in killed.turns] == [
        ("tests.e2e_handlers.fanout_first", "done")
    ]
    assert "worker died" in killed.error
    assert [(t.handler, str(t.state)) for t in retry.turns] == [
        ("tests.e2e_handlers.fanout_slow", "done"),
        ("tests.e2e_handlers.fanout_last", "done"),
    ]


def count(redis: Redis, key: str) -> int:
    return int(redis.get(key) or 0)


def test_sigterm_lets_the_worker_finish_its_job_then_exit(
    redis_server: RedisServer, redis: Redis, make_stack: Callable[..., Stack]
) -> None:
    stack = make_stack(redis_server.url)
    web, worker = stack.start("web"), stack.start("worker")
    assert send(web.url, "evt_slow", "order.slow", seconds=3).status_code == 200
    wait_until(lambda: starts(redis, "evt_slow") == 1, 30, "the slow job to start")
    worker.signal(signal.SIGTERM)
    assert worker.popen.wait(30) == 0
    assert effects(redis, "evt_slow") == 1
    assert Job.fetch(job_id_for("inbound", "evt_slow"), connection=redis).meta["state"] == "done"


@pytest.mark.timeout(LOAD_SECONDS + 200)
def test_sustained_load_with_a_worker_killed_and_another_started(
    redis_server: RedisServer, redis: Redis, make_stack: Callable[..., Stack]
) -> None:
    stack = make_stack(redis_server.url)
    web, first = stack.start("web"), stack.start("worker")
    answers: dict[str, list[str]] = {}
    lock = threading.Lock()
    deadline = time.monotonic() + LOAD_SECONDS
    counter = iter(range(10**9))

    def sender(seed: int) -> None:
        import httpx

        with httpx.Client(timeout=10) as http:
            while time.monotonic() < deadline:
                n = next(counter)
                # One delivery in ten repeats an earlier event, as a provider's retry would.
                event_id = f"evt_{n // 10 * 10 - 10}" if n % 10 == 9 and n > 20 else f"evt_{n}"
                body = event_body(event_id, "order.created")
                response = http.post(
                    f"{web.url}/webhooks/inbound",
                    content=body,
                    headers={"X-Signature-256": sign(body, SECRET)},
                )
                with lock:
                    answers.setdefault(event_id, []).append(response.json()["status"])
                time.sleep(SENDERS / LOAD_RATE)

    def chaos(worker: Process) -> None:
        time.sleep(LOAD_SECONDS / 3)
        worker.kill_hard()
        time.sleep(LOAD_SECONDS / 6)
        stack.start("worker")

    with ThreadPoolExecutor(max_workers=5) as pool:
        chaos_done = pool.submit(chaos, first)
        list(pool.map(sender, range(SENDERS)))
        chaos_done.result()

    accepted = [i for i, statuses in answers.items() if "accepted" in statuses]
    assert all(statuses.count("accepted") == 1 for statuses in answers.values())
    assert sum(len(s) for s in answers.values()) > len(accepted) > 100

    def counts() -> list[int]:
        return [int(x or 0) for x in redis.mget([f"effects:{i}" for i in accepted])]

    wait_until(lambda: min(counts()) >= 1, 120, "every accepted event to be handled")
    twice = [i for i, n in zip(accepted, counts(), strict=True) if n > 1]
    assert len(twice) <= 1, twice  # only the job the killed worker was running, if any


def test_one_sigterm_stops_a_worker_whose_redis_is_down(
    own_redis: RedisServer, make_stack: Callable[..., Stack]
) -> None:
    stack = make_stack(own_redis.url)
    worker = stack.start("worker")
    redis = Redis.from_url(own_redis.url)
    wait_until(lambda: bool(redis.smembers("rq:workers")), 30, "the worker to register")
    own_redis.kill()
    wait_until(lambda: "could not connect" in worker.output(), 30, "the worker to notice")

    worker.signal(signal.SIGTERM)  # once, to the process group, as honcho does
    try:
        code = worker.popen.wait(15)  # a hang detector: it used to go on for 45 s and more
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the worker ignored SIGTERM:\n{worker.output()[-2000:]}") from None
    # Stopped by its handler (0), or by the signal itself while RQ was still retrying its
    # first connection (before its handlers are set): a stop either way, never a crash.
    assert code in (0, -signal.SIGTERM), worker.output()[-2000:]
    assert "Traceback" not in worker.output()


def test_a_failing_handler_prints_one_line_per_attempt_and_no_traceback(
    redis_server: RedisServer, redis: Redis, make_stack: Callable[..., Stack]
) -> None:
    stack = make_stack(redis_server.url, WEBHOOK_MAX_RETRIES="1")
    web, worker = stack.start("web"), stack.start("worker")
    redis.set("fail:evt_noisy", 1)
    assert send(web.url, "evt_noisy", "order.flaky").status_code == 200
    job = job_id_for("inbound", "evt_noisy")
    wait_until(lambda: redis.zscore("rq:failed:webhooks", job) is not None, 30, "a dead letter")
    worker.stop()
    output = worker.output()
    # The traceback is kept in the job, where `dead show` and the dashboard read it.
    assert "Traceback" not in output and "downstream is down" in output
    lines = [line for line in output.splitlines() if '"event_id": "evt_noisy"' in line]
    assert [json.loads(line)["state"] for line in lines] == ["retry_scheduled", "dead_lettered"]
    assert "Traceback" in (Job.fetch(job, connection=redis).latest_result().exc_string or "")
