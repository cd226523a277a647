"""The worker's link to Redis cut while a handler runs: the handler returns during the outage,
and what it finished is settled once Redis answers again, never run a second time.

The worker (and its batch child) reach Redis through a TCP proxy that the test cuts; the
receiver and the handlers' side effects (EFFECTS_REDIS_URL) reach it directly, so they
count what ran whatever the worker's link does."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from redis import Redis
from rq import Queue
from rq.job import Job, JobStatus

from app.keys import job_id_for
from tests.processes import RedisProxy, Stack, effects, send, wait_until
from workers.dev.redis_server import RedisServer

# From the cut to its end: the 2 s handler returns in the middle of it.
OUTAGE_SECONDS = 6


def starts(redis: Redis, event_id: str) -> int:
    return int(redis.get(f"starts:{event_id}") or 0)


def job_status(redis: Redis, event_id: str) -> JobStatus | None:
    return Job.fetch(job_id_for("inbound", event_id), connection=redis).get_status()


@pytest.mark.parametrize("outage", ["reset", "blackhole"])
@pytest.mark.parametrize("mode", ["fork", "simple"])
def test_a_handler_that_returned_while_the_workers_link_was_cut_is_settled_not_rerun(
    redis_server: RedisServer,
    redis: Redis,
    make_stack: Callable[..., Stack],
    make_proxy: Callable[[int], RedisProxy],
    mode: str,
    outage: str,
) -> None:
    proxy = make_proxy(redis_server.port)
    stack = make_stack(proxy.url, WEBHOOK_WORKER_MODE=mode, EFFECTS_REDIS_URL=redis_server.url)
    web = stack.start("web", REDIS_URL=redis_server.url)
    worker = stack.start("worker")
    wait_until(
        lambda: b"idle" in [redis.hget(k, "state") for k in redis.keys("rq:worker:*")],
        30,
        "the worker to wait for work",
    )
    redis.set("sleep:cut", 2)
    assert send(web.url, "cut", "order.slow").json()["status"] == "accepted"
    wait_until(lambda: starts(redis, "cut") == 1, 20, "the handler to start")

    cut_at = time.monotonic()
    proxy.cut() if outage == "reset" else proxy.blackhole()
    wait_until(lambda: effects(redis, "cut") == 1, 10, "the handler to return")
    # The outage goes on after the handler returned: its end is reported, and written,
    # while Redis cannot be reached from the worker.
    time.sleep(max(OUTAGE_SECONDS - (time.monotonic() - cut_at), 0))
    assert effects(redis, "cut") == 1 and job_status(redis, "cut") == JobStatus.STARTED
    proxy.restore()

    wait_until(lambda: job_status(redis, "cut") != JobStatus.STARTED, 45, "the event settled")
    job = Job.fetch(job_id_for("inbound", "cut"), connection=redis)
    assert job.get_status() == JobStatus.FINISHED, worker.output()[-3000:]
    assert (job.meta["state"], job.meta["attempts"]) == ("done", 1)
    queue = Queue("webhooks", connection=redis)
    assert queue.scheduled_job_registry.get_job_count(cleanup=False) == 0
    assert queue.failed_job_registry.get_job_count(cleanup=False) == 0

    # The worker carries on: the next event runs once, through the restored link.
    assert send(web.url, "after", "order.created").json()["status"] == "accepted"
    wait_until(lambda: effects(redis, "after") == 1, 20, "the next event")
    assert worker.stop() == 0
    # Stopped, the worker ran nothing more: the handler ran once, its event counted once.
    assert (starts(redis, "cut"), effects(redis, "cut")) == (1, 1)
    assert Job.fetch(job_id_for("inbound", "cut"), connection=redis).meta["attempts"] == 1
    assert int(redis.hget("webhook:stats:inbound", "done") or 0) == 2
