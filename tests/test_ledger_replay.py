"""Replaying stored events (`webhooks replay ledger`, the Events page's Replay): whether an
event may run again is decided atomically, so a replay from a stale read, two replays at
once, or a replay next to a requeue queue it at most once."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from redis import Redis
from rq import Queue
from rq.job import Job

from app.jobstate import EventStatus
from app.keys import job_id_for
from app.settings import Settings
from tests.conftest import Harness, webhooks
from workers import Event, handler
from workers.ops.deadletters import DeadLetters
from workers.ops.ledger import LedgerRecord
from workers.ops.replay import LedgerReplay, Replayed

QUEUE = "rq:queue:webhooks"
RECORD = "webhook:event:inbound:{}"


def queued(redis: Redis) -> list[str]:
    return [item.decode() for item in redis.lrange(QUEUE, 0, -1)]


def stale_record(replayer: LedgerReplay, event_id: str) -> LedgerRecord:
    """The record as `replay ledger` reads it: once, before replaying anything."""
    [record] = [r for r in replayer.ledger.find("inbound") if r.id == event_id]
    return record


@pytest.fixture
def done(make_harness: Callable[..., Harness], redis: Redis) -> Harness:
    """evt_done settled (ignored: no handler), and its finished job dropped (as RQ's
    result TTL does)."""
    harness = make_harness(webhook_max_retries=0)
    harness.event("evt_done")
    harness.drain()
    redis.delete("rq:job:" + job_id_for("inbound", "evt_done"))
    return harness


@pytest.fixture
def dead(make_harness: Callable[..., Harness]) -> Harness:
    """evt_x dead-lettered: its handler failed, with no retry."""
    harness = make_harness(webhook_max_retries=0)

    @handler("inbound", "order.created")
    def boom(event: Event) -> None:
        raise RuntimeError("no")

    harness.event("evt_x")
    harness.drain()
    return harness


def test_a_replay_from_a_stale_read_leaves_an_event_requeued_meanwhile_alone(
    dead: Harness, redis: Redis
) -> None:
    harness = dead
    replayer = LedgerReplay(harness.settings, redis)
    stale = stale_record(replayer, "evt_x")
    assert stale.status is EventStatus.DEAD
    job_id = job_id_for("inbound", "evt_x")
    assert DeadLetters(harness.settings, redis).requeue(job_id, by="dashboard")
    assert replayer.replay(harness.settings.sources["inbound"], stale) is Replayed.PENDING
    assert queued(redis) == [job_id]


def test_a_replay_in_the_middle_of_rqs_requeue_is_refused(
    dead: Harness, redis: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RQ's requeue (ours, and rq-dashboard's button) takes the job out of the failed
    registry, then enqueues it in a second round trip: a replay in between sees neither."""
    harness = dead
    stale = stale_record(LedgerReplay(harness.settings, redis), "evt_x")
    job_id = job_id_for("inbound", "evt_x")
    enqueue, answers = Queue._enqueue_job, []

    def replay_first(queue: Queue, job: Job, *args: Any, **kwargs: Any) -> Job:
        assert redis.zscore("rq:failed:webhooks", job_id) is None  # out of the registry
        replayer = LedgerReplay(harness.settings, redis)
        answers.append(replayer.replay(harness.settings.sources["inbound"], stale))
        return enqueue(queue, job, *args, **kwargs)

    monkeypatch.setattr(Queue, "_enqueue_job", replay_first)
    assert DeadLetters(harness.settings, redis).requeue(job_id, by="dashboard")
    assert answers == [Replayed.PENDING]
    assert queued(redis) == [job_id]


def test_a_second_replay_of_the_same_read_is_refused(done: Harness, redis: Redis) -> None:
    replayer = LedgerReplay(done.settings, redis)
    stale = stale_record(replayer, "evt_done")
    source = done.settings.sources["inbound"]
    assert replayer.replay(source, stale) is Replayed.ENQUEUED
    assert replayer.replay(source, stale) is Replayed.PENDING
    assert queued(redis) == [job_id_for("inbound", "evt_done")]
    assert redis.hget(RECORD.format("evt_done"), "status") == b"queued"


def test_replays_racing_each_other_queue_the_event_once(done: Harness, redis: Redis) -> None:
    stale = stale_record(LedgerReplay(done.settings, redis), "evt_done")
    source = done.settings.sources["inbound"]
    start, answers = threading.Barrier(8), []

    def replay() -> None:
        connection = Redis.from_url(done.settings.redis_url)
        replayer = LedgerReplay(done.settings, connection)
        start.wait()
        answers.append(replayer.replay(source, stale))
        connection.close()

    threads = [threading.Thread(target=replay) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(answers) == sorted([Replayed.ENQUEUED] + [Replayed.PENDING] * 7)
    assert queued(redis) == [job_id_for("inbound", "evt_done")]


def _in_queue(redis: Redis, job_id: str) -> None:
    redis.rpush(QUEUE, job_id)


def _taken(redis: Redis, job_id: str) -> None:
    redis.rpush(QUEUE + ":intermediate", job_id)


def _retrying(redis: Redis, job_id: str) -> None:
    redis.zadd("rq:scheduled:webhooks", {job_id: time.time() + 60})


def _an_execution(redis: Redis, job_id: str) -> None:
    redis.zadd(f"rq:executions:{job_id}", {"e1": time.time() + 60})


def _started(redis: Redis, job_id: str) -> None:
    redis.zadd("rq:wip:webhooks", {f"{job_id}:e1": time.time() - 60})  # even a lapsed entry


def _being_requeued(redis: Redis, job_id: str) -> None:
    # RQ's requeue has taken it out of the failed registry and not yet enqueued it.
    redis.hset(f"rq:job:{job_id}", "status", "failed")


def _record_says_running(redis: Redis, job_id: str) -> None:
    redis.hset(RECORD.format("evt_done"), "status", "running")


@pytest.mark.parametrize(
    "state",
    [_in_queue, _taken, _retrying, _an_execution, _started, _being_requeued, _record_says_running],
    ids=lambda state: state.__name__.strip("_"),
)
def test_an_event_whose_job_may_still_run_is_not_replayed(
    done: Harness, redis: Redis, state: Callable[[Redis, str], None]
) -> None:
    """The record (read earlier) says done; the job, now, may run: nothing is touched."""
    replayer = LedgerReplay(done.settings, redis)
    stale = stale_record(replayer, "evt_done")
    job_id = job_id_for("inbound", "evt_done")
    done.event("evt_other")  # a job of another event in the queue
    redis.hset(f"rq:job:{job_id}", mapping={"status": "started", "note": "the live job"})
    state(redis, job_id)
    before = {key: redis.dump(key) for key in redis.keys("*")}
    assert replayer.replay(done.settings.sources["inbound"], stale) is Replayed.PENDING
    assert {key: redis.dump(key) for key in redis.keys("*")} == before


def test_an_event_whose_record_says_pending_but_whose_job_is_lost_is_replayed(
    done: Harness, redis: Redis
) -> None:
    redis.hset(RECORD.format("evt_done"), "status", "queued")
    replayer = LedgerReplay(done.settings, redis)
    record = stale_record(replayer, "evt_done")
    assert replayer.replay(done.settings.sources["inbound"], record) is Replayed.ENQUEUED
    assert queued(redis) == [job_id_for("inbound", "evt_done")]


def test_an_event_whose_payload_is_stored_nowhere_is_not_replayed_as_an_empty_body(
    done: Harness, redis: Redis, cli_env: Callable[[Settings], None]
) -> None:
    # Its job is gone and its record holds no copy (an abandoned job's dead letter, purged).
    redis.hdel(RECORD.format("evt_done"), "payload")
    replayer = LedgerReplay(done.settings, redis)
    record = stale_record(replayer, "evt_done")
    assert replayer.replay(done.settings.sources["inbound"], record) is Replayed.NO_PAYLOAD
    assert queued(redis) == [] and not redis.exists("rq:job:" + job_id_for("inbound", "evt_done"))
    assert redis.hget(RECORD.format("evt_done"), "status") == b"ignored"  # as it was
    cli_env(done.settings)
    since = str(record.received_at - 1)
    counts = json.loads(webhooks("replay", "ledger", "inbound", "--since", since, "--json").stdout)
    assert counts == {
        "fetched": 1,
        "new": 0,
        "already_had": 0,
        "requeued": 0,
        "enqueued": 0,
        "pending": 0,
        "no_payload": 1,
        "untracked": 0,
    }
    shown = webhooks("replay", "ledger", "inbound", "--since", since)
    assert shown.exit_code == 0 and "no payload: 1" in shown.stdout
    assert queued(redis) == []
