"""Where the product leans on RQ beyond its documented API, pinned, so an RQ upgrade that
changes one fails here first. docs/internals.md's "RQ internals we rely on" lists each with
its test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable

import pytest
from redis import Redis
from rq import Queue
from rq.job import Job, JobStatus
from rq.registry import FailedJobRegistry, ScheduledJobRegistry, StartedJobRegistry
from rq.utils import import_attribute

from app.jobhash import JOB_FUNCTION, JOB_FUNCTIONS, ON_FAILURE
from app.jobstate import EventStatus, JobMeta
from app.keys import RQ_EXECUTION_PREFIX, RQ_QUEUES_SET, RQ_WORKER_PREFIX, Keys, job_id_for
from app.settings import Settings
from tests.conftest import Harness, drain, event_body
from workers import Event, handler
from workers.ops.purge import Settled
from workers.runtime.batch import retry_job
from workers.runtime.clock import RedisClock
from workers.runtime.retries import ORPHANED


def test_the_keys_the_claim_script_writes_are_rqs_own(redis: Redis) -> None:
    keys = Keys("webhook", "webhooks")
    queue = Queue("webhooks", connection=redis)
    assert keys.queue == queue.key
    assert Queue.redis_queues_keys == RQ_QUEUES_SET
    assert keys.job("j1") == Job("j1", connection=redis).key
    assert keys.failed == FailedJobRegistry(queue=queue).key
    assert keys.scheduled == ScheduledJobRegistry(queue=queue).key


def test_the_keys_the_purge_script_deletes_are_rqs_own(redis: Redis) -> None:
    """What `Job.delete()` deletes, as `workers/ops/purge.py` names it."""
    from rq.executions import WORKER_EXECUTIONS_KEY_TEMPLATE, Execution, ExecutionRegistry
    from rq.results import Result

    keys = Keys("webhook", "webhooks")
    job = Job("j1", connection=redis)
    queue = Queue("webhooks", connection=redis)
    assert keys.started == StartedJobRegistry(queue=queue).key
    assert keys.finished == queue.finished_job_registry.key
    assert keys.canceled == queue.canceled_job_registry.key
    assert [s.key(keys) for s in Settled] == [keys.failed, keys.finished, keys.canceled]
    assert [s.status for s in Settled] == ["", JobStatus.FINISHED, JobStatus.CANCELED]
    assert keys.results("j1") == Result.get_key("j1")
    assert keys.executions("j1") == ExecutionRegistry("j1", connection=redis).key
    assert keys.dependents("j1") == job.dependents_key
    assert keys.dependencies("j1") == job.dependencies_key
    execution = Execution("x1", "j1", connection=redis, worker_name="w1")
    assert RQ_EXECUTION_PREFIX + execution.composite_key == execution.key
    assert WORKER_EXECUTIONS_KEY_TEMPLATE.format("w1") == RQ_WORKER_PREFIX + "w1:executions"


def test_the_keys_metrics_read_for_workers_and_the_scheduler_are_rqs_own(redis: Redis) -> None:
    """/metrics counts a worker while its key lives without a `death` field, and the
    scheduler by its lock (app/snapshot.py)."""
    from rq import Worker
    from rq.scheduler import RQScheduler
    from rq.worker_registration import WORKERS_BY_QUEUE_KEY

    keys = Keys("webhook", "webhooks")
    queue = Queue("webhooks", connection=redis)
    assert keys.workers == WORKERS_BY_QUEUE_KEY % "webhooks"
    assert keys.scheduler_lock == RQScheduler.get_locking_key("webhooks")
    worker = Worker([queue], connection=redis, name="seam")
    worker.register_birth()
    assert redis.smembers(keys.workers) == {worker.key.encode()}
    assert not redis.hexists(worker.key, "death")
    worker.register_death()
    assert redis.smembers(keys.workers) == set() and redis.hexists(worker.key, "death")


# RQ's names of the keys `Keys` reproduces, printed by a process whose RQ_KEY_PREFIX is set
# (RQ reads it once, at import).
_RQS_NAMES = """
import json
from rq import Queue
from rq.executions import WORKER_EXECUTIONS_KEY_TEMPLATE, Execution, ExecutionRegistry
from rq.job import Job
from rq.registry import FailedJobRegistry, ScheduledJobRegistry, StartedJobRegistry
from rq.results import Result
from rq.scheduler import RQScheduler
from rq.worker_registration import WORKERS_BY_QUEUE_KEY
from redis import Redis

redis = Redis()  # never connected: only names are asked for
queue = Queue("webhooks", connection=redis)
job = Job("j1", connection=redis)
execution = Execution("x1", "j1", connection=redis, worker_name="w1")
print(json.dumps({
    "queue": queue.key, "queues": Queue.redis_queues_keys, "job": job.key,
    "failed": FailedJobRegistry(queue=queue).key,
    "scheduled": ScheduledJobRegistry(queue=queue).key,
    "started": StartedJobRegistry(queue=queue).key,
    "results": Result.get_key("j1"), "executions": ExecutionRegistry("j1", connection=redis).key,
    "dependents": job.dependents_key, "dependencies": job.dependencies_key,
    "execution": execution.key, "worker_executions": WORKER_EXECUTIONS_KEY_TEMPLATE.format("w1"),
    "workers": WORKERS_BY_QUEUE_KEY % "webhooks",
    "scheduler_lock": RQScheduler.get_locking_key("webhooks"),
}))
"""


def test_a_shards_keys_are_rqs_own_under_the_shards_rq_key_prefix() -> None:
    """On a cluster, a worker process serves one shard: RQ_KEY_PREFIX `<tag>:rq`
    (`app/shards.py`), whose names the claim script must write."""
    from app.shards import shard_tag

    tag = shard_tag(7, 16)
    keys = Keys("webhook", "webhooks").sharded(tag)
    env = {**os.environ, "RQ_KEY_PREFIX": keys.rq}
    printed = subprocess.run(
        [sys.executable, "-c", _RQS_NAMES], env=env, capture_output=True, text=True, check=True
    )
    rqs = json.loads(printed.stdout)
    assert rqs == {
        "queue": keys.queue,
        "queues": keys.queues,
        "job": keys.job("j1"),
        "failed": keys.failed,
        "scheduled": keys.scheduled,
        "started": keys.started,
        "results": keys.results("j1"),
        "executions": keys.executions("j1"),
        "dependents": keys.dependents("j1"),
        "dependencies": keys.dependencies("j1"),
        "execution": keys.execution_prefix + "j1:x1",
        "worker_executions": keys.worker_prefix + "w1:executions",
        "workers": keys.workers,
        "scheduler_lock": keys.scheduler_lock,
    }
    assert all(name.startswith(tag + ":") for name in rqs.values())


@pytest.mark.parametrize("function", sorted(JOB_FUNCTIONS))
def test_a_job_stored_under_any_versions_function_name_runs(
    make_settings: Callable[..., Settings], redis: Redis, function: str
) -> None:
    """Jobs queued or dead-lettered by any version keep the function path they were
    written with; RQ imports it when they run."""
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
        function,
        args=("inbound", "evt_old", "order.created", raw, {}, 1.0),
        job_id="old-job",
        meta=old_meta,
    )
    drain(settings, redis)
    assert seen == ["evt_old"]
    assert Job.fetch("old-job", connection=redis).meta["state"] == "done"


def test_the_stored_paths_are_the_stable_aliases_and_import() -> None:
    # A worker of an earlier version imports these from the jobs a newer receiver writes.
    assert (JOB_FUNCTION, ON_FAILURE) == ("workers.job.deliver", "workers.job.on_failure")
    assert callable(import_attribute(JOB_FUNCTION)) and callable(import_attribute(ON_FAILURE))


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
    # Its payload is in its ledger record, as a settled event's is: replay keeps it after
    # the dead letter is purged.
    record = "webhook:event:inbound:evt_orphan"
    assert redis.hget(record, "payload") == event_body("evt_orphan")


@pytest.mark.parametrize("interval", ["0", "600"])
def test_our_retry_writes_what_rqs_job_retry_writes(
    make_harness: Callable[..., Harness], redis: Redis, interval: str
) -> None:
    """`batch.retry_job` is RQ's `Job.retry` with every write in the caller's pipeline
    (RQ's writes a scheduled job's status at once). Pinned here against RQ's own."""
    harness = make_harness(webhook_retry_intervals=interval, webhook_max_retries=2)
    queue = Queue("webhooks", connection=redis)
    found = {}
    for event_id, retry in [("evt_rq", Job.retry), ("evt_ours", None)]:
        harness.event(event_id)
        job_id = job_id_for("inbound", event_id)
        redis.lrem(queue.key, 0, job_id)
        job = Job.fetch(job_id, connection=redis)
        with redis.pipeline() as pipe:
            if retry is None:
                retry_job(job, queue, pipe, RedisClock(redis).read())
            else:
                retry(job, queue, pipe)
            pipe.execute()
        fields = redis.hgetall(job.key)
        found[event_id] = (
            fields[b"status"],
            fields.get(b"retries_left"),
            job_id in queue.job_ids,
            job_id in queue.scheduled_job_registry,
        )
    assert found["evt_ours"] == found["evt_rq"]
    assert found["evt_ours"][2:] == ((True, False) if interval == "0" else (False, True))


def test_rqs_worker_has_every_member_the_batch_and_settlement_use(redis: Redis) -> None:
    from rq import Worker

    from workers.runtime.rq_worker import MEMBERS

    worker = Worker([Queue("seams-members", connection=redis)], connection=redis)
    assert [name for name in MEMBERS if not hasattr(worker, name)] == []


def test_rqs_cleanup_execution_given_an_execution_reads_only_the_workers_executions(
    redis: Redis,
) -> None:
    from types import SimpleNamespace

    from rq.executions import Execution, cleanup_execution

    job = Queue("seams-cleanup", connection=redis).enqueue("builtins.print")
    execution = Execution("exec-1", job.id, redis)
    only_executions = SimpleNamespace(executions={execution.id: execution})
    with redis.pipeline() as pipe:
        cleanup_execution(only_executions, job, pipe, execution)  # type: ignore[arg-type]
        pipe.execute()
    assert only_executions.executions == {}
