"""The batched worker keeps RQ's data model: what RQ's own worker leaves in Redis for a job,
the batched one leaves too, key for key and field for field."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from redis import Redis
from rq import Queue, SimpleWorker
from rq.job import Job, JobStatus

from app.keys import job_id_for
from app.settings import Settings
from tests.conftest import Harness, drain
from workers import Event, handler

EVENTS = ["ok_0", "ok_1", "ok_2", "bad_0"]
# Names that differ between two runs of the same jobs: worker names, execution ids.
_VOLATILE = re.compile(r"[0-9a-f]{32}")


def shape(redis: Redis, events: list[str]) -> dict[str, Any]:
    """RQ's keys as types, hash field names and whether each expires: not the values, which
    hold pids, times, tracebacks and worker names."""
    found: dict[str, Any] = {}
    names = {job_id_for("inbound", e): e for e in events}
    for raw_key in redis.scan_iter("rq:*"):
        key = raw_key.decode()
        for job_id, event in names.items():
            key = key.replace(job_id, f"<{event}>")
        if key.startswith(("rq:worker", "rq:workers", "rq:scheduler", "rq:clean_registries")):
            continue  # the workers themselves (one is RQ's, one ours) and their locks
        kind = redis.type(raw_key).decode()
        detail: Any = None
        if kind == "hash":
            detail = sorted(f.decode() for f in redis.hkeys(raw_key))
        elif kind == "zset":
            detail = redis.zcard(raw_key)
        elif kind == "list":
            detail = redis.llen(raw_key)
        elif kind == "stream":
            detail = redis.xlen(raw_key)
        found[_VOLATILE.sub("<id>", key)] = (kind, detail, redis.ttl(raw_key) > 0)
    return found


@pytest.fixture
def run_through(make_harness: Callable[..., Harness], redis: Redis) -> Callable[..., Any]:
    """Sends the same events, then drains them with RQ's worker or ours; returns RQ's keys."""

    def run(worker: str) -> dict[str, Any]:
        redis.flushall()
        harness = make_harness(webhook_max_retries=0, webhook_worker_mode="simple")

        @handler("inbound", "order.created")
        def ok(event: Event) -> None:
            pass

        @handler("inbound", "order.broken")
        def broken(event: Event) -> None:
            raise RuntimeError("no")

        for event in EVENTS[:-1]:
            harness.event(event)
        harness.event(EVENTS[-1], "order.broken")
        if worker == "rq":
            queue = Queue("webhooks", connection=redis)
            SimpleWorker([queue], connection=redis).work(burst=True, logging_level="WARNING")
        else:
            drain(harness.settings, redis)
        return shape(redis, EVENTS)

    return run


def test_the_batched_worker_leaves_the_keys_rqs_own_worker_leaves(
    run_through: Callable[..., Any],
) -> None:
    ours, theirs = run_through("batched"), run_through("rq")
    assert {k: v for k, v in ours.items() if v != theirs.get(k)} == {
        k: v for k, v in theirs.items() if v != ours.get(k)
    }


@pytest.mark.parametrize("mode", ["fork", "simple"])
def test_a_batch_settles_every_job_as_it_ended(
    make_harness: Callable[..., Harness], redis: Redis, mode: str
) -> None:
    harness = make_harness(webhook_max_retries=0, webhook_worker_mode=mode, webhook_batch_size=10)

    @handler("inbound", "order.created")
    def ok(event: Event) -> None:
        pass

    @handler("inbound", "order.broken")
    def broken(event: Event) -> None:
        raise RuntimeError("no")

    for n in range(7):
        harness.event(f"e{n}", "order.broken" if n == 3 else "order.created")
    drain(harness.settings, redis)
    statuses = {
        n: Job.fetch(job_id_for("inbound", f"e{n}"), connection=redis).get_status()
        for n in range(7)
    }
    assert statuses == {n: JobStatus.FAILED if n == 3 else JobStatus.FINISHED for n in range(7)}


def test_a_lone_event_is_not_held_back_for_a_batch(
    make_harness: Callable[..., Harness], redis: Redis
) -> None:
    harness = make_harness(webhook_batch_size=50)
    harness.event("alone")
    drain(harness.settings, redis)
    job = Job.fetch(job_id_for("inbound", "alone"), connection=redis)
    assert job.get_status() == JobStatus.FINISHED


def test_the_batch_size_is_a_setting(make_settings: Callable[..., Settings]) -> None:
    assert make_settings(webhook_batch_size=7).webhook_batch_size == 7
