"""Where the product leans on RQ beyond its documented API, pinned, so an RQ upgrade that
changes one fails here first. The README's "RQ internals we rely on" lists each with its test."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from redis import Redis
from rq import Queue
from rq.job import Job, JobStatus
from rq.registry import FailedJobRegistry, ScheduledJobRegistry, StartedJobRegistry

from app.jobhash import JOB_FUNCTION
from app.jobstate import EventStatus, JobMeta
from app.keys import RQ_QUEUES_SET, Keys, job_id_for
from app.settings import Settings
from tests.conftest import Harness, drain, event_body
from workers import Event, handler
from workers.runtime.retries import ORPHANED


def test_the_keys_the_claim_script_writes_are_rqs_own(redis: Redis) -> None:
    keys = Keys("webhook", "webhooks")
    queue = Queue("webhooks", connection=redis)
    assert keys.queue == queue.key
    assert Queue.redis_queues_keys == RQ_QUEUES_SET
    assert keys.job("j1") == Job("j1", connection=redis).key
    assert keys.failed == FailedJobRegistry(queue=queue).key
    assert keys.scheduled == ScheduledJobRegistry(queue=queue).key


def test_a_job_enqueued_under_the_old_function_name_still_runs(
    make_settings: Callable[..., Settings], redis: Redis
) -> None:
    """Jobs queued or dead-lettered before workers/ was split name `workers.job.deliver`."""
    seen: list[str] = []

    @handler("inbound", "order.created")
    def record(event: Event) -> None:
        seen.append(event.id)

    settings = make_settings(webhook_worker_mode="simple")
    old_meta = {"source": "inbound", "event_id": "evt_old", "type": "order.created",
                "received_at": 1.0, "attempts": 0, "budget": 2, "budget_start": 0,
                "prefix": "webhook", "ledger_ttl": 60}  # fmt: skip
    raw = event_body("evt_old")
    Queue("webhooks", connection=redis).enqueue_call(
        "workers.job.deliver",
        args=("inbound", "evt_old", "order.created", raw, {}, 1.0),
        job_id="old-job",
        meta=old_meta,
    )
    drain(settings, redis)
    assert seen == ["evt_old"]
    assert Job.fetch("old-job", connection=redis).meta["state"] == "done"
    assert JOB_FUNCTION != "workers.job.deliver"  # new jobs name the new path


def test_meta_written_by_the_previous_version_reads_back() -> None:
    old_dead = {"source": "s", "event_id": "e", "type": "t", "received_at": 1.0,
                "prefix": "webhook", "ledger_ttl": 60, "attempts": 3, "budget": 2,
                "dead": True, "dead_at": 5.0, "last_error": "boom", "handled_by": "x"}  # fmt: skip
    meta = JobMeta.from_meta(old_dead)
    assert meta.state is EventStatus.DEAD and meta.budget_spent_elsewhere(0)
    assert meta.to_meta()["handled_by"] == "x"  # keys it does not know are kept


def abandon(redis: Redis, job_id: str) -> None:
    """What a SIGKILLed worker leaves: the job STARTED, in the started registry, its
    heartbeat long expired, and off the queue."""
    redis.lrem("rq:queue:webhooks", 0, job_id)
    job = Job.fetch(job_id, connection=redis)
    job.set_status(JobStatus.STARTED)
    meta = JobMeta.from_meta(job.meta)
    meta.attempts, meta.state = 1, EventStatus.RUNNING
    job.meta = meta.to_meta()
    job.save_meta()
    redis.zadd(StartedJobRegistry("webhooks", connection=redis).key, {f"{job_id}:exec-1": 1})


def ledger_status(redis: Redis, event_id: str) -> str:
    return (redis.hget(f"webhook:event:inbound:{event_id}", "status") or b"").decode()


def test_rqs_sweep_calls_on_failure_and_the_abandoned_job_is_retried_at_once(
    make_harness: Callable[..., Harness], redis: Redis, capfd: pytest.CaptureFixture[str]
) -> None:
    harness = make_harness(webhook_retry_intervals="600", webhook_max_retries=2)
    harness.event("evt_orphan")
    job_id = job_id_for("inbound", "evt_orphan")
    abandon(redis, job_id)

    StartedJobRegistry("webhooks", connection=redis).cleanup()

    # Queued again at once, not scheduled in 600 s; the stored intervals are intact.
    assert Queue("webhooks", connection=redis).job_ids == [job_id]
    assert json.loads(redis.hget(f"rq:job:{job_id}", "retry_intervals") or b"[]") == [600, 600]
    job = Job.fetch(job_id, connection=redis)
    assert job.retries_left == 1
    assert (job.meta["state"], job.meta["last_error"]) == ("retrying", ORPHANED)
    assert ledger_status(redis, "evt_orphan") == "retrying"
    logged = [json.loads(x) for x in capfd.readouterr().err.splitlines() if x.startswith("{")]
    assert {k: logged[-1][k] for k in ("state", "delay", "retries_left", "error")} == {
        "state": "retry_scheduled",
        "delay": 0,
        "retries_left": 1,
        "error": ORPHANED,
    }


def test_rqs_sweep_dead_letters_an_abandoned_job_without_retries_through_on_failure(
    make_harness: Callable[..., Harness], redis: Redis
) -> None:
    harness = make_harness(webhook_max_retries=0)
    harness.event("evt_orphan")
    job_id = job_id_for("inbound", "evt_orphan")
    abandon(redis, job_id)

    StartedJobRegistry("webhooks", connection=redis).cleanup()

    assert job_id in FailedJobRegistry("webhooks", connection=redis)
    meta = Job.fetch(job_id, connection=redis).meta
    assert (meta["state"], meta["last_error"]) == ("dead", ORPHANED) and meta["dead_at"]
    assert ledger_status(redis, "evt_orphan") == "dead"
