"""Settling a batch (`workers/runtime/settlement.py`) when someone else writes its jobs at the
same time: another worker's recovery, or anything rewriting job hashes."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from redis import Redis
from redis.client import Pipeline
from redis.exceptions import ConnectionError as RedisConnectionError
from rq.job import Job, JobStatus

from app.keys import job_id_for
from tests.conftest import Harness
from tests.processes import wait_until
from workers import Event, handler
from workers.runtime import settlement
from workers.runtime.batch import Batch
from workers.runtime.run import build_worker
from workers.runtime.settlement import settle_batch
from workers.runtime.take import take
from workers.runtime.worker import WebhookWorker

JOB_ID = job_id_for("inbound", "w0")


def broken(event: Event) -> None:
    raise RuntimeError("no")


@pytest.fixture
def ran(make_harness: Callable[..., Harness], redis: Redis) -> tuple[WebhookWorker, Batch]:
    """A batch of one event whose handler failed (two retries granted), run in the worker's
    process and not settled yet; and its worker."""
    harness = make_harness(webhook_worker_mode="simple", webhook_max_retries=2)
    handler("inbound", "order.created")(broken)
    harness.event("w0")
    worker = build_worker(harness.settings, redis)
    queue = worker.queues[0]
    batch = take(redis, queue, 10, None)
    assert batch is not None
    worker._batch = batch
    worker.execute_job(batch.entries[0].job, queue)
    assert worker._unsettled is batch
    return worker, batch


def rewrite_jobs_while_settling(
    monkeypatch: pytest.MonkeyPatch, redis: Redis, times: int
) -> list[int]:
    """Another client writes the job's hash between the settlement's WATCH and its EXEC, the
    first `times` times; returns the list the attempts are counted in."""
    attempts: list[int] = []
    real = settlement.still_held

    def still_held(*args: Any) -> Any:
        attempts.append(len(attempts))
        if len(attempts) <= times:
            redis.hset(Job.key_for(JOB_ID), "touched", len(attempts))
        return real(*args)

    monkeypatch.setattr(settlement, "still_held", still_held)
    return attempts


def test_a_settlement_that_meets_a_concurrent_write_settles_once_on_its_next_try(
    ran: tuple[WebhookWorker, Batch], redis: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker, batch = ran
    attempts = rewrite_jobs_while_settling(monkeypatch, redis, times=1)

    assert settle_batch(worker, batch) == batch.entries
    assert len(attempts) == 2
    job = Job.fetch(JOB_ID, connection=redis)
    # One retry used of two, not one per try: the first try's changes were put back.
    assert job.get_status() == JobStatus.QUEUED
    assert job.retries_left == 1
    assert redis.hget("webhook:stats:inbound", "retried") == b"1"


def test_a_settlement_whose_jobs_keep_changing_gives_up_and_leaves_them_for_recovery(
    ran: tuple[WebhookWorker, Batch], redis: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker, batch = ran
    attempts = rewrite_jobs_while_settling(monkeypatch, redis, times=settlement.ATTEMPTS)

    with pytest.raises(RuntimeError, match="settling a batch of 1: its jobs kept changing"):
        settle_batch(worker, batch)
    assert len(attempts) == settlement.ATTEMPTS
    # Nothing was written: the job is still running, in the started registry, where a
    # sweep finds it once the worker's heartbeats stop.
    job = Job.fetch(JOB_ID, connection=redis)
    assert job.get_status() == JobStatus.STARTED and job.retries_left == 2
    assert batch.entries[0].execution.composite_key.encode() in redis.zrange(  # type: ignore[union-attr]
        batch.started.key, 0, -1
    )
    assert redis.hget("webhook:stats:inbound", "retried") is None


def test_a_job_another_worker_settled_first_is_not_settled_again(
    ran: tuple[WebhookWorker, Batch], redis: Redis, capfd: pytest.CaptureFixture[str]
) -> None:
    worker, batch = ran
    execution = batch.entries[0].execution
    assert execution is not None
    # What any settlement does first: the execution leaves the started registry.
    redis.zrem(batch.started.key, execution.composite_key)

    assert settle_batch(worker, batch) == []
    assert execution.id not in worker.executions
    assert Job.fetch(JOB_ID, connection=redis).get_status() == JobStatus.STARTED
    assert redis.hget("webhook:stats:inbound", "retried") is None
    assert "job settled by another worker; not settled again" in capfd.readouterr().err


def test_a_reply_out_of_turn_drops_the_connection_and_the_batch_is_settled_once(
    ran: tuple[WebhookWorker, Batch], redis: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen after a cut link: WATCH read a reply left on its connection, and ZMSCORE read
    WATCH's OK; the worker's teardown died on a ValueError (exit 1). As then, the first
    connection the settlement is given holds a reply nobody read."""
    worker, batch = ran
    pool = worker.connection.connection_pool
    real = pool.get_connection
    dropped: list[Any] = []

    def get_connection(*args: Any, **kwargs: Any) -> Any:
        connection = real(*args, **kwargs)
        if not dropped:
            connection.send_command("PING")  # its PONG left unread
            dropped.append(connection._sock)
        return connection

    monkeypatch.setattr(pool, "get_connection", get_connection)
    assert settle_batch(worker, batch) == batch.entries
    job = Job.fetch(JOB_ID, connection=redis)
    assert (job.get_status(), job.retries_left) == (JobStatus.QUEUED, 1)
    assert redis.hget("webhook:stats:inbound", "retried") == b"1"
    # The socket that answered out of turn was closed, never handed out again.
    assert [sock.fileno() for sock in dropped] == [-1]


def test_in_simple_mode_a_batchs_settlement_is_applied_while_the_next_batch_runs(
    make_harness: Callable[..., Harness], redis: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker sends a batch's settlement and runs the next batch before its answer: held
    back by Redis (its writes paused), the first event's settlement does not hold up the
    second event's handler, and is applied once Redis lets it."""
    harness = make_harness(webhook_worker_mode="simple", webhook_batch_size=1)
    seen: list[tuple[str, JobStatus | None]] = []
    first = job_id_for("inbound", "first")

    @handler("inbound", "order.created")
    def look(event: Event) -> None:
        seen.append((event.id, Job.fetch(first, connection=redis).get_status()))
        redis.execute_command("CLIENT", "UNPAUSE")

    real = settlement.send
    sent: list[Batch] = []

    def send(worker: WebhookWorker, batch: Batch) -> settlement.Sent:
        if not sent:  # the first event's: writes wait (reads do not) until a handler says
            redis.execute_command("CLIENT", "PAUSE", 60_000, "WRITE")
        sent.append(batch)
        return real(worker, batch)

    monkeypatch.setattr(settlement, "send", send)
    harness.event("first")
    harness.event("second")
    harness.drain()

    assert seen == [("first", JobStatus.STARTED), ("second", JobStatus.STARTED)]
    assert Job.fetch(first, connection=redis).get_status() == JobStatus.FINISHED
    assert redis.hget("webhook:stats:inbound", "done") == b"2"


@pytest.mark.parametrize("applied", [True, False], ids=["applied", "not-applied"])
def test_a_settlement_whose_answer_is_lost_while_the_next_batch_runs_is_settled_once(
    make_harness: Callable[..., Harness],
    redis: Redis,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    applied: bool,
) -> None:
    """The link is cut after the first event's settlement was sent, before its answer was
    read; Redis had applied it, or (its writes paused, the connection cut while the next
    event's handler runs) had not: the worker settles the batch again once Redis answers,
    nothing is applied twice, and each event's outcome is logged once, by the worker that
    settled it (itself: no word of another worker)."""
    harness = make_harness(webhook_worker_mode="simple", webhook_batch_size=1)
    real_send, real_finish = settlement.send, settlement.finish
    in_flight: list[settlement.Sent] = []
    cut: list[settlement.Sent] = []

    def lose(sent: settlement.Sent) -> None:
        cut.append(sent)
        hang_up(redis, sent)

    @handler("inbound", "order.created")
    def run(event: Event) -> None:
        if not applied and in_flight and not cut:
            lose(in_flight[0])  # its transaction held back by the pause: dropped with it
            redis.execute_command("CLIENT", "UNPAUSE")

    def send(worker: WebhookWorker, batch: Batch) -> settlement.Sent:
        if not applied and not in_flight:
            redis.execute_command("CLIENT", "PAUSE", 60_000, "WRITE")
        sent = real_send(worker, batch)
        in_flight.append(sent)
        return sent

    def finish(sent: settlement.Sent) -> list[Any] | None:
        if applied and not cut:
            lose(sent)
        return real_finish(sent)

    monkeypatch.setattr(settlement, "send", send)
    monkeypatch.setattr(settlement, "finish", finish)
    for name in ("first", "second", "third"):
        harness.event(name)
    harness.drain()

    assert len(cut) == 1
    assert redis.hget("webhook:stats:inbound", "done") == b"3"
    for name in ("first", "second", "third"):
        job = Job.fetch(job_id_for("inbound", name), connection=redis)
        assert (job.get_status(), job.meta["attempts"]) == (JobStatus.FINISHED, 1)
    assert redis.zcard("rq:wip:webhooks") == 0  # the started registry: nothing left running
    err = capfd.readouterr().err
    assert "settled by another worker" not in err
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    done = sorted(line["event_id"] for line in lines if line.get("state") == "done")
    assert done == ["first", "second", "third"]


def lose_the_answer(
    monkeypatch: pytest.MonkeyPatch, redis: Redis, applied: bool
) -> list[settlement.Sent]:
    """The first settlement's answer is lost: the link is cut once Redis has applied it (its
    job queued again), or, its writes paused, before Redis could."""
    real_send, real_finish = settlement.send, settlement.finish
    cut: list[settlement.Sent] = []

    def send(worker: WebhookWorker, batch: Batch) -> settlement.Sent:
        if not applied and not cut:
            redis.execute_command("CLIENT", "PAUSE", 60_000, "WRITE")
        return real_send(worker, batch)

    def finish(sent: settlement.Sent) -> list[Any] | None:
        if not cut:
            cut.append(sent)
            if applied:
                wait_until(lambda: redis.hget(Job.key_for(JOB_ID), "status") == b"queued")
            hang_up(redis, sent)
            if not applied:
                redis.execute_command("CLIENT", "UNPAUSE")
        return real_finish(sent)

    monkeypatch.setattr(settlement, "send", send)
    monkeypatch.setattr(settlement, "finish", finish)
    return cut


def hang_up(redis: Redis, sent: settlement.Sent) -> None:
    """Cut the settlement's connection, and wait until Redis has dropped it: a paused
    transaction would otherwise still run if the pause ended first."""
    host, port = sent.connection._sock.getsockname()[:2]  # type: ignore[attr-defined]
    address = f"{host}:{port}"
    sent.connection.disconnect()  # type: ignore[no-untyped-call]
    wait_until(lambda: all(c["addr"] != address for c in redis.client_list()), what="hang-up")


def logged(err: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in err.splitlines() if line.startswith("{")]


def test_a_retry_whose_settlement_answer_was_lost_but_applied_is_logged_once(
    ran: tuple[WebhookWorker, Batch],
    redis: Redis,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    worker, batch = ran
    cut = lose_the_answer(monkeypatch, redis, applied=True)
    worker.settle_unsettled()

    assert len(cut) == 1 and JOB_ID in batch.unanswered
    job = Job.fetch(JOB_ID, connection=redis)
    assert (job.get_status(), job.retries_left) == (JobStatus.QUEUED, 1)
    assert redis.hget("webhook:stats:inbound", "retried") == b"1"
    err = capfd.readouterr().err
    assert "settled by another worker" not in err
    retries = [line for line in logged(err) if line.get("state") == "retry_scheduled"]
    assert [(line["event_id"], line["retries_left"]) for line in retries] == [("w0", 1)]


def test_a_job_another_worker_settled_after_a_lost_answer_is_not_logged_as_ours(
    ran: tuple[WebhookWorker, Batch],
    redis: Redis,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """The lost settlement was not applied; before the worker tries again, another worker
    settles the job (its execution leaves the started registry, its meta is its own)."""
    worker, batch = ran
    execution = batch.entries[0].execution
    assert execution is not None
    real_still_held = settlement.still_held
    cut = lose_the_answer(monkeypatch, redis, applied=False)

    def settled_meanwhile(*args: Any) -> Any:
        if cut and redis.zscore(batch.started.key, execution.composite_key) is not None:
            job = Job.fetch(JOB_ID, connection=redis)
            job.meta["last_error"] = "settled by the other worker's recovery"
            job.save_meta()
            redis.zrem(batch.started.key, execution.composite_key)
        return real_still_held(*args)

    monkeypatch.setattr(settlement, "still_held", settled_meanwhile)
    worker.settle_unsettled()

    assert len(cut) == 1 and JOB_ID in batch.unanswered
    assert redis.hget("webhook:stats:inbound", "retried") is None
    err = capfd.readouterr().err
    assert "job settled by another worker; not settled again" in err
    assert [line for line in logged(err) if line.get("state") == "retry_scheduled"] == []


def test_a_lost_answer_redis_cannot_be_asked_about_is_logged_as_unsure_not_as_another_workers(
    ran: tuple[WebhookWorker, Batch],
    redis: Redis,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """The retry finds the job settled, and its read of who did is cut: the settlement
    stands, and the line says it cannot tell."""
    worker, _ = ran
    lose_the_answer(monkeypatch, redis, applied=True)
    real = Pipeline.execute

    def execute(self: Pipeline, *args: Any, **options: Any) -> Any:
        if any(command[0][0] == "HMGET" for command in self.command_stack):
            raise RedisConnectionError("cut while asking")
        return real(self, *args, **options)

    monkeypatch.setattr(Pipeline, "execute", execute)
    worker.settle_unsettled()

    job = Job.fetch(JOB_ID, connection=redis)
    assert (job.get_status(), job.retries_left) == (JobStatus.QUEUED, 1)
    err = capfd.readouterr().err
    assert "settled by another worker" not in err
    assert (
        "job settled already (by this worker's try whose answer was lost, or by another worker)"
        in err
    )
