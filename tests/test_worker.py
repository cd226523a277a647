"""The RQ worker: dispatch, retries, dead letters and requeues with a full budget.

Handlers run in RQ's forked work-horse, so they report through Redis, not test memory.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from redis import Redis
from rq import Queue
from rq.job import Job, JobStatus
from rq.registry import FailedJobRegistry, ScheduledJobRegistry

from app.intake import SyncIntake
from app.keys import job_id_for
from app.providers import Delivery
from app.settings import Settings
from tests.conftest import AUTH, Harness, event_body
from workers import Event, PermanentError, handler
from workers.ops.dashboard import create_dashboard
from workers.ops.deadletters import DeadLetters
from workers.registry import handler_name

Post = Callable[..., Any]
RunWorker = Callable[[Settings], Any]


@pytest.fixture
def settings(make_settings: Callable[..., Settings]) -> Settings:
    return make_settings()


@pytest.fixture
def deliver(
    make_client: Callable[..., TestClient], settings: Settings, post_event: Post
) -> Callable[..., str]:
    client = make_client(settings)

    def send(event_id: str, event_type: str = "order.created", **extra: Any) -> str:
        response = post_event(client, event_body(event_id, event_type, **extra))
        assert response.json()["status"] == "accepted"
        return job_id_for("inbound", event_id)

    return send


def record(redis_url: str) -> Callable[[Event], None]:
    """A handler body that counts its runs and keeps what it was given."""

    def run(event: Event) -> None:
        r = Redis.from_url(redis_url)
        r.incr(f"runs:{event.id}")
        r.rpush(
            f"seen:{event.id}",
            json.dumps(
                {
                    "attempt": event.attempt,
                    "type": event.type,
                    "payload": event.payload,
                    "raw": event.raw.decode(),
                    "source": event.source,
                    "received_at": event.received_at.timestamp(),
                }
            ),
        )

    return run


def runs(redis: Redis, event_id: str) -> int:
    return int(redis.get(f"runs:{event_id}") or 0)


def failed(redis: Redis) -> list[str]:
    return [str(i) for i in FailedJobRegistry("webhooks", connection=redis).get_job_ids()]


def test_a_handled_event_runs_once_and_settles_done(
    settings: Settings, deliver: Callable[..., str], run_worker: RunWorker, redis: Redis
) -> None:
    handler("inbound", "order.created")(record(settings.redis_url))
    job_id = deliver("evt_1", amount=5)
    run_worker(settings)
    assert runs(redis, "evt_1") == 1
    job = Job.fetch(job_id, connection=redis)
    assert job.get_status() == JobStatus.FINISHED and job.meta["state"] == "done"


def test_the_handler_gets_the_parsed_payload_the_raw_bytes_and_attempt_one(
    settings: Settings, deliver: Callable[..., str], run_worker: RunWorker, redis: Redis
) -> None:
    handler("inbound", "order.created")(record(settings.redis_url))
    before = time.time()
    deliver("evt_1", amount=5)
    run_worker(settings)
    seen = json.loads(redis.lindex("seen:evt_1", 0) or b"{}")
    assert seen["payload"] == {"id": "evt_1", "type": "order.created", "amount": 5}
    assert json.loads(seen["raw"]) == seen["payload"]
    assert (seen["attempt"], seen["source"], seen["type"]) == (1, "inbound", "order.created")
    assert before - 1 <= seen["received_at"] <= time.time()


@pytest.mark.parametrize(
    "event_type",
    ["order." + "x" * 300, "order.\x1b[31mred\x07", "order.\u202eevil", "\u00e9v\u00e9nement"],
    ids=["long", "control", "bidi", "accents"],
)
def test_an_odd_event_type_reaches_its_handler_unchanged(
    settings: Settings,
    deliver: Callable[..., str],
    run_worker: RunWorker,
    redis: Redis,
    event_type: str,
) -> None:
    handler("inbound", event_type)(record(settings.redis_url))
    job_id = deliver("evt_odd", event_type=event_type)
    run_worker(settings)
    assert json.loads(redis.lindex("seen:evt_odd", 0) or b"{}")["type"] == event_type
    assert Job.fetch(job_id, connection=redis).meta["state"] == "done"


def test_a_form_encoded_event_reaches_its_handler_as_fields_with_its_exact_bytes(
    settings: Settings, run_worker: RunWorker, redis: Redis
) -> None:
    raw = b"MessageSid=SM1&Body=caf%C3%A9+ok&To=%2B1&To=%2B2&Empty="
    delivery = Delivery("SM1", "message", payload_format="form")
    SyncIntake(settings, redis).claim_and_enqueue(
        settings.sources["inbound"], delivery, raw, time.time()
    )
    handler("inbound", "message")(record(settings.redis_url))
    run_worker(settings)
    seen = json.loads(redis.lindex("seen:SM1", 0) or b"{}")
    assert seen["payload"] == {
        "MessageSid": "SM1",
        "Body": "café ok",
        "To": ["+1", "+2"],
        "Empty": "",
    }
    assert seen["raw"] == raw.decode()


def test_an_event_without_a_handler_settles_as_ignored(
    settings: Settings, deliver: Callable[..., str], run_worker: RunWorker, redis: Redis
) -> None:
    handler("inbound", "order.created")(record(settings.redis_url))
    job_id = deliver("evt_2", "customer.deleted")
    run_worker(settings)
    job = Job.fetch(job_id, connection=redis)
    assert job.get_status() == JobStatus.FINISHED and job.meta["state"] == "ignored"
    assert runs(redis, "evt_2") == 0 and failed(redis) == []


def test_a_wildcard_handler_receives_every_type_of_its_source(
    settings: Settings, deliver: Callable[..., str], run_worker: RunWorker, redis: Redis
) -> None:
    handler("inbound", "*")(record(settings.redis_url))
    deliver("evt_a", "order.created")
    deliver("evt_b", "anything.else")
    run_worker(settings)
    assert (runs(redis, "evt_a"), runs(redis, "evt_b")) == (1, 1)


def test_an_async_handler_is_awaited(
    settings: Settings, deliver: Callable[..., str], run_worker: RunWorker, redis: Redis
) -> None:
    sync_record = record(settings.redis_url)

    @handler("inbound", "order.created")
    async def on_order(event: Event) -> None:
        sync_record(event)

    deliver("evt_async")
    run_worker(settings)
    assert runs(redis, "evt_async") == 1


def failing(redis_url: str, error: type[Exception] = RuntimeError) -> Callable[[Event], None]:
    counted = record(redis_url)

    def run(event: Event) -> None:
        counted(event)
        raise error("downstream answered 502")

    return run


def test_a_failing_handler_is_retried_then_dead_lettered(
    settings: Settings, deliver: Callable[..., str], run_worker: RunWorker, redis: Redis
) -> None:
    run = handler("inbound", "order.created")(failing(settings.redis_url))
    job_id = deliver("evt_3")
    run_worker(settings)
    assert runs(redis, "evt_3") == 1 + settings.webhook_max_retries
    attempts = [json.loads(x)["attempt"] for x in redis.lrange("seen:evt_3", 0, -1)]
    assert attempts == [1, 2, 3]
    assert failed(redis) == [job_id]
    job = Job.fetch(job_id, connection=redis)
    assert job.meta["attempts"] == 3 and job.meta["state"] == "dead"
    assert job.meta["last_error"] == f"{handler_name(run)}: RuntimeError: downstream answered 502"


def test_permanent_error_dead_letters_at_once(
    settings: Settings, deliver: Callable[..., str], run_worker: RunWorker, redis: Redis
) -> None:
    handler("inbound", "order.created")(failing(settings.redis_url, PermanentError))
    job_id = deliver("evt_4")
    run_worker(settings)
    assert runs(redis, "evt_4") == 1
    assert failed(redis) == [job_id]
    assert Job.fetch(job_id, connection=redis).meta["permanent"] is True


def test_a_retry_waits_for_the_configured_interval(
    make_harness: Callable[..., Harness], redis: Redis
) -> None:
    harness = make_harness(webhook_retry_intervals="90,300")
    handler("inbound", "order.created")(failing(harness.settings.redis_url))
    harness.event("evt_5")
    before = time.time()
    harness.drain()
    scheduled = ScheduledJobRegistry("webhooks", connection=redis)
    job_id = job_id_for("inbound", "evt_5")
    assert scheduled.get_job_ids() == [job_id]
    assert (
        89
        <= scheduled.get_expiration_time(Job.fetch(job_id, connection=redis)).timestamp() - before
        <= 92
    )
    assert runs(redis, "evt_5") == 1


def test_a_handler_over_the_job_timeout_is_killed_and_counted_as_a_failure(
    make_harness: Callable[..., Harness], redis: Redis
) -> None:
    harness = make_harness(webhook_job_timeout=1, webhook_max_retries=0)

    @handler("inbound", "order.created")
    def slow(event: Event) -> None:
        time.sleep(30)

    harness.event("evt_slow")
    started = time.monotonic()
    harness.drain()
    assert time.monotonic() - started < 20
    job = Job.fetch(job_id_for("inbound", "evt_slow"), connection=redis)
    assert "JobTimeoutException" in job.meta["last_error"]
    assert failed(redis) == [job.id]


@pytest.mark.parametrize("mode", ["fork", "simple"])
def test_each_job_of_a_batch_has_its_own_timeout(
    make_harness: Callable[..., Harness], redis: Redis, mode: str
) -> None:
    """The timeout is each job's own, not the batch's: two jobs within theirs finish,
    the third, too slow, is stopped at its own."""
    harness = make_harness(webhook_job_timeout=1, webhook_max_retries=0, webhook_worker_mode=mode)

    @handler("inbound", "order.quick")
    def quick(event: Event) -> None:
        time.sleep(0.6)

    @handler("inbound", "order.slow")
    def slow(event: Event) -> None:
        time.sleep(30)

    for event_id, kind in (("q1", "order.quick"), ("q2", "order.quick"), ("s", "order.slow")):
        harness.event(event_id, kind)
    harness.drain()
    statuses = {
        e: Job.fetch(job_id_for("inbound", e), connection=redis).get_status()
        for e in ("q1", "q2", "s")
    }
    assert statuses == {"q1": JobStatus.FINISHED, "q2": JobStatus.FINISHED, "s": JobStatus.FAILED}
    slow_job = Job.fetch(job_id_for("inbound", "s"), connection=redis)
    assert "exceeded maximum timeout value (1 seconds)" in slow_job.meta["last_error"]


@pytest.mark.parametrize("mode", ["fork", "simple"])
def test_a_handler_that_uses_sigalrm_leaves_the_next_jobs_timeout_in_force(
    make_harness: Callable[..., Harness], redis: Redis, mode: str
) -> None:
    """A handler sets its own SIGALRM handler and alarm, clears the alarm and leaves its
    handler in place: the next job of the batch still stops at its own timeout."""
    harness = make_harness(webhook_job_timeout=1, webhook_max_retries=0, webhook_worker_mode=mode)

    @handler("inbound", "order.own_alarm")
    def own_alarm(event: Event) -> None:
        def mine(signum: int, frame: Any) -> None:
            raise TimeoutError

        signal.signal(signal.SIGALRM, mine)
        signal.alarm(5)
        signal.alarm(0)

    @handler("inbound", "order.slow")
    def slow(event: Event) -> None:
        time.sleep(4)

    harness.event("a", "order.own_alarm")
    harness.event("s", "order.slow")
    harness.drain()
    job = Job.fetch(job_id_for("inbound", "s"), connection=redis)
    assert job.get_status() == JobStatus.FAILED
    assert "exceeded maximum timeout value (1 seconds)" in job.meta["last_error"]


def dead_after_full_budget(
    settings: Settings,
    deliver: Callable[..., str],
    run_worker: RunWorker,
    redis: Redis,
    event_id: str,
) -> str:
    handler("inbound", "order.created")(failing(settings.redis_url))
    job_id = deliver(event_id)
    run_worker(settings)
    assert failed(redis) == [job_id] and runs(redis, event_id) == 3
    return job_id


def test_requeue_by_the_command_restores_the_full_retry_budget(
    settings: Settings, deliver: Callable[..., str], run_worker: RunWorker, redis: Redis
) -> None:
    job_id = dead_after_full_budget(settings, deliver, run_worker, redis, "evt_6")
    assert DeadLetters(settings, redis).requeue(job_id) is True
    run_worker(settings)
    assert runs(redis, "evt_6") == 6  # 3 more attempts, not RQ's single one
    assert failed(redis) == [job_id]
    assert Job.fetch(job_id, connection=redis).meta["requeues"] == 1


@pytest.mark.parametrize("endpoint", ["/job/{job_id}/requeue", "/requeue/webhooks"])
def test_requeue_from_the_dashboard_restores_the_full_retry_budget(
    settings: Settings,
    deliver: Callable[..., str],
    run_worker: RunWorker,
    redis: Redis,
    endpoint: str,
) -> None:
    job_id = dead_after_full_budget(settings, deliver, run_worker, redis, "evt_7")
    dashboard = create_dashboard(settings).test_client()
    response = dashboard.post(
        endpoint.format(job_id=job_id),
        auth=AUTH,
        headers={"Origin": "http://localhost"},
    )
    assert response.status_code == 200
    assert Queue("webhooks", connection=redis).job_ids == [job_id]
    run_worker(settings)
    assert runs(redis, "evt_7") == 6
    assert failed(redis) == [job_id]


def test_a_requeued_event_that_now_succeeds_settles_done(
    settings: Settings, deliver: Callable[..., str], run_worker: RunWorker, redis: Redis
) -> None:
    job_id = dead_after_full_budget(settings, deliver, run_worker, redis, "evt_8")
    from workers.registry import registry

    registry.clear()
    handler("inbound", "order.created")(record(settings.redis_url))
    DeadLetters(settings, redis).requeue(job_id)
    run_worker(settings)
    job = Job.fetch(job_id, connection=redis)
    assert job.get_status() == JobStatus.FINISHED and job.meta["state"] == "done"
    assert job.meta["attempts"] == 4 and failed(redis) == []


def test_each_terminal_state_writes_one_json_line(
    settings: Settings,
    deliver: Callable[..., str],
    run_worker: RunWorker,
    capfd: pytest.CaptureFixture[str],
) -> None:
    handler("inbound", "order.created")(record(settings.redis_url))
    handler("inbound", "order.failed")(failing(settings.redis_url))
    deliver("evt_ok")
    deliver("evt_skip", "not.handled")
    deliver("evt_bad", "order.failed")
    run_worker(settings)
    lines = [
        json.loads(line)
        for line in capfd.readouterr().err.splitlines()
        if line.startswith("{") and '"state"' in line
    ]
    states = [(line["state"], line["event_id"]) for line in lines]
    assert ("accepted", "evt_ok") in states
    assert ("done", "evt_ok") in states and ("ignored", "evt_skip") in states
    assert states.count(("retry_scheduled", "evt_bad")) == 2
    assert states.count(("dead_lettered", "evt_bad")) == 1
    assert all(line["source"] == "inbound" and "type" in line for line in lines)
    assert not any("payload" in line or "raw" in line for line in lines)
