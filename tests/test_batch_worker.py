"""The batched worker keeps RQ's data model: what RQ's own worker leaves in Redis for a job,
the batched one leaves too, key for key and field for field."""

from __future__ import annotations

import pickle
import re
from collections.abc import Callable
from typing import Any

import pytest
from redis import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from rq import Queue
from rq.exceptions import StopRequested
from rq.job import Job, JobStatus
from rq.registry import FailedJobRegistry
from rq.worker import WorkerStatus

from app.keys import job_id_for
from app.settings import Settings
from tests.conftest import Harness, drain, drain_with_rqs_worker
from tests.processes import RedisProxy, Stack, effects, send, wait_until
from workers import Event, handler
from workers.dev.redis_server import RedisServer
from workers.runtime import recovery
from workers.runtime import worker as worker_module
from workers.runtime.batch import Batch
from workers.runtime.run import build_worker
from workers.runtime.take import take

EVENTS = ["ok_0", "ok_1", "ok_2", "bad_0"]
# Names that differ between two runs of the same jobs: worker names, execution ids.
_VOLATILE = re.compile(r"[0-9a-f]{32}")


def ok(event: Event) -> None:
    pass


def broken(event: Event) -> None:
    raise RuntimeError("no")


def ok_and_broken_handlers() -> None:
    """`order.created` succeeds, `order.broken` fails."""
    handler("inbound", "order.created")(ok)
    handler("inbound", "order.broken")(broken)


def shape(redis: Redis, events: list[str]) -> dict[str, Any]:
    """RQ's keys as types, hash field names (and a job's status) and whether each expires:
    not the other values, which hold pids, times, tracebacks and worker names."""
    found: dict[str, Any] = {}
    names = {job_id_for("inbound", e): e for e in events}
    for raw_key in redis.scan_iter("rq:*"):
        key = raw_key.decode()
        for job_id, event in names.items():
            key = key.replace(job_id, f"<{event}>")
        # The maintenance locks (rq:clean_registries, rq:clean_groups) are taken when a
        # worker's maintenance comes round, which a short drain may or may not reach.
        if key.startswith(("rq:worker", "rq:workers", "rq:scheduler", "rq:clean_")):
            continue  # the workers themselves (one is RQ's, one ours) and their locks
        kind = redis.type(raw_key).decode()
        detail: Any = None
        if kind == "hash":
            # A field RQ writes empty is one it reads as absent: the claim leaves those
            # out (`tests/test_jobhash.py`), where RQ's whole-hash saves write them.
            fields = redis.hgetall(raw_key)
            detail = sorted(f.decode() for f, v in fields.items() if v != b"")
            status = redis.hget(raw_key, "status")
            if status is not None and key.startswith("rq:job:"):
                detail.append(f"status={status.decode()}")
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

    def run(worker: str, mode: str = "simple") -> dict[str, Any]:
        redis.flushall()
        harness = make_harness(webhook_max_retries=0, webhook_worker_mode=mode)
        ok_and_broken_handlers()
        for event in EVENTS[:-1]:
            harness.event(event)
        harness.event(EVENTS[-1], "order.broken")
        if worker == "rq":
            queue = Queue("webhooks", connection=redis)
            drain_with_rqs_worker(queue)
        else:
            drain(harness.settings, redis)
        return shape(redis, EVENTS)

    return run


@pytest.mark.parametrize("mode", ["fork", "simple"])
def test_the_batched_worker_leaves_the_keys_rqs_own_worker_leaves(
    run_through: Callable[..., Any], mode: str
) -> None:
    ours, theirs = run_through("batched", mode), run_through("rq")
    assert {k: v for k, v in ours.items() if v != theirs.get(k)} == {
        k: v for k, v in theirs.items() if v != ours.get(k)
    }


@pytest.mark.parametrize("mode", ["fork", "simple"])
def test_a_batch_settles_every_job_as_it_ended(
    make_harness: Callable[..., Harness], redis: Redis, mode: str
) -> None:
    harness = make_harness(webhook_max_retries=0, webhook_worker_mode=mode, webhook_batch_size=10)
    ok_and_broken_handlers()
    for n in range(7):
        harness.event(f"e{n}", "order.broken" if n == 3 else "order.created")
    drain(harness.settings, redis)
    statuses = {
        n: Job.fetch(job_id_for("inbound", f"e{n}"), connection=redis).get_status()
        for n in range(7)
    }
    assert statuses == {n: JobStatus.FAILED if n == 3 else JobStatus.FINISHED for n in range(7)}


def test_a_lone_event_is_not_held_back_for_a_batch(
    redis_server: RedisServer, redis: Redis, make_stack: Callable[..., Stack]
) -> None:
    stack = make_stack(redis_server.url, WEBHOOK_BATCH_SIZE="50")
    web, worker = stack.start("web"), stack.start("worker")
    # The worker waits on the queue (RQ's blocking move) for up to 20 s before it looks
    # again: an event arriving then is taken at once, alone, not when a batch fills.
    wait_until(lambda: b"idle" in [redis.hget(k, "state") for k in redis.keys("rq:worker:*")])
    assert send(web.url, "alone").json()["status"] == "accepted"
    wait_until(lambda: effects(redis, "alone") == 1, 10, "the lone event, well before 20 s")
    worker.stop()


def test_the_worker_takes_at_most_the_batch_size_at_a_time(
    make_harness: Callable[..., Harness], redis: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    harness = make_harness(webhook_batch_size=3, webhook_worker_mode="simple")
    for n in range(7):
        harness.event(f"s{n}")
    sizes: list[int] = []

    def counting(*args: Any) -> Batch | None:
        found = take(*args)
        if found is not None:
            sizes.append(len(found.entries))
        return found

    monkeypatch.setattr(worker_module, "take", counting)
    drain(harness.settings, redis)
    assert sizes == [3, 3, 1]


def test_a_begin_cut_partway_leaves_every_job_for_recovery(
    make_harness: Callable[..., Harness],
    redis: Redis,
    redis_server: RedisServer,
    make_proxy: Callable[[int], RedisProxy],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    harness = make_harness(webhook_worker_mode="simple")
    ids = [job_id_for("inbound", f"c{n}") for n in range(5)]
    for n in range(5):
        harness.event(f"c{n}")
    proxy = make_proxy(redis_server.port)
    worker = build_worker(harness.settings, Redis.from_url(proxy.url))
    queue = worker.queues[0]
    batch = take(worker.connection, queue, 10, None)
    assert batch is not None and len(batch.entries) == 5
    # The begin is sent, but the connection is cut at its last write (the started
    # registry's), after every job's move off the intermediate queue.
    proxy.cut_requests_at = queue.started_job_registry.key.encode()
    worker._batch = batch
    with pytest.raises(RedisConnectionError):
        worker.execute_job(batch.entries[0].job, queue)
    proxy.cut_requests_at = None

    monkeypatch.setattr(recovery, "STUCK_SECONDS", 0)
    for _ in range(2):  # seen once, then put back
        recovery.recover(build_worker(harness.settings, redis), Queue("webhooks", connection=redis))
    assert sorted(Queue("webhooks", connection=redis).job_ids) == sorted(ids)
    assert {Job.fetch(i, connection=redis).get_status() for i in ids} == {JobStatus.QUEUED}


@pytest.mark.parametrize("mode", ["fork", "simple"])
@pytest.mark.parametrize("poison", ["foreign", "meta", "hash", "data"])
def test_a_job_that_is_not_an_events_is_failed_and_the_jobs_behind_it_run(
    make_harness: Callable[..., Harness],
    redis: Redis,
    capfd: pytest.CaptureFixture[str],
    mode: str,
    poison: str,
) -> None:
    harness = make_harness(webhook_worker_mode=mode)

    @handler("inbound", "order.created")
    def ok(event: Event) -> None:
        redis.rpush("seen", event.id)

    for n in range(3):
        harness.event(f"p{n}")
    queue = Queue("webhooks", connection=redis)
    if poison == "foreign":  # something else enqueued on our queue
        bad = queue.enqueue("builtins.print", "x", at_front=True).id
    else:
        bad = job_id_for("inbound", "p0")
        damaged = pickle.dumps({"x": 1}) if poison == "meta" else b"\x80not a pickle"
        # "data": the call (function and arguments) damaged, the meta intact.
        redis.hset(f"rq:job:{bad}", "data" if poison == "data" else "meta", damaged)
    drain(harness.settings, redis)

    assert bad in FailedJobRegistry(queue=queue)
    handled = sorted(x.decode() for x in redis.lrange("seen", 0, -1))
    assert handled == sorted({"p0", "p1", "p2"} - ({"p0"} if poison != "foreign" else set()))
    assert queue.count == 0
    assert "not a webhook event's was moved to the failed registry" in capfd.readouterr().err


def test_a_warm_stop_while_idle_waits_for_the_transaction_in_flight(
    make_settings: Callable[..., Settings], redis: Redis
) -> None:
    worker = build_worker(make_settings(), redis)
    worker.set_state(WorkerStatus.IDLE)
    finished = False
    with pytest.raises(StopRequested), worker.critical():
        worker._shutdown()  # what RQ's SIGTERM handler calls: it raises when idle
        finished = True
    assert finished
