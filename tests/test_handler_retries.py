"""Each handler retries on its own: through the real worker, in both of its modes, a handler
that succeeded never runs again for its event, whatever its siblings do.

Handlers run in the worker's forked child (fork mode), so they count their runs in Redis.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from redis import Redis
from rq import Queue
from rq.job import Job
from rq.registry import FailedJobRegistry, ScheduledJobRegistry

from app.keys import Keys, job_id_for
from tests.conftest import Harness
from workers import Event, PermanentError, handler
from workers.dev.redis_server import RedisServer
from workers.ops.deadletters import DeadLetters
from workers.ops.ledger import EventLedger, LedgerRecord
from workers.registry import handler_name, registry

MODES = ["fork", "simple"]


@pytest.fixture
def counted(redis_server: RedisServer) -> Callable[..., Callable[[Event], None]]:
    """A handler body named `name` that counts its runs (and their attempts) in Redis, and
    fails while its count is under `fail_until`, or always with `always`."""
    url = redis_server.url

    def make(name: str, fail_until: int = 0, error: type[Exception] = RuntimeError) -> Callable:
        def body(event: Event) -> None:
            r = Redis.from_url(url)
            n = r.incr(f"runs:{name}:{event.id}")
            r.rpush(f"attempts:{name}:{event.id}", event.attempt)
            if r.exists(f"fail:{name}") or n < fail_until:
                raise error(f"{name} failed on run {n}")

        body.__name__ = body.__qualname__ = name
        body.__module__ = "handlers"
        return body

    return make


def runs(redis: Redis, name: str, event_id: str = "evt_1") -> int:
    return int(redis.get(f"runs:{name}:{event_id}") or 0)


def attempts_run(redis: Redis, name: str, event_id: str = "evt_1") -> list[int]:
    return [int(a) for a in redis.lrange(f"attempts:{name}:{event_id}", 0, -1)]


def record_of(redis: Redis, event_id: str = "evt_1") -> LedgerRecord:
    found = EventLedger(Keys("webhook", "webhooks"), redis).get("inbound", event_id)
    assert found is not None
    return found


def turns_by_attempt(record: LedgerRecord) -> list[list[tuple[str, str]]]:
    return [[(t.handler, str(t.state)) for t in a.turns] for a in record.attempt_log]


def make_retry_due(redis: Redis, job_id: str) -> None:
    """What RQ's scheduler does when a retry's time comes: the job back on its queue."""
    scheduled = ScheduledJobRegistry("webhooks", connection=redis)
    assert scheduled.get_job_ids() == [job_id]
    job = Job.fetch(job_id, connection=redis)
    scheduled.remove(job)
    Queue("webhooks", connection=redis).enqueue_job(job)


@pytest.mark.parametrize("mode", MODES)
def test_three_handlers_the_middle_failing_twice_run_the_others_once(
    make_harness: Callable[..., Harness],
    counted: Callable[..., Callable[[Event], None]],
    redis: Redis,
    mode: str,
) -> None:
    harness = make_harness(webhook_worker_mode=mode, webhook_max_retries=4)
    for body in (counted("audit"), counted("crm", fail_until=3), counted("mail")):
        handler("inbound", "order.created")(body)
    harness.event("evt_1")
    harness.drain()
    assert (runs(redis, "audit"), runs(redis, "crm"), runs(redis, "mail")) == (1, 3, 1)
    assert attempts_run(redis, "mail") == [1]  # not held back by crm's failure
    assert attempts_run(redis, "crm") == [1, 2, 3]
    record = record_of(redis)
    assert (record.status, record.attempts) == ("done", 3)
    assert turns_by_attempt(record) == [
        [("handlers.audit", "done"), ("handlers.crm", "failed"), ("handlers.mail", "done")],
        [("handlers.crm", "failed")],
        [("handlers.crm", "done")],
    ]
    assert record.attempt_log[0].error == "handlers.crm: RuntimeError: crm failed on run 1"
    assert set(record.handlers.values()) == {"done"}


@pytest.mark.parametrize("mode", MODES)
def test_a_permanent_error_dead_letters_for_its_handler_once_the_others_are_through(
    make_harness: Callable[..., Harness],
    counted: Callable[..., Callable[[Event], None]],
    redis: Redis,
    mode: str,
) -> None:
    harness = make_harness(webhook_worker_mode=mode, webhook_max_retries=4)
    handler("inbound", "order.created")(counted("audit"))
    handler("inbound", "order.created")(counted("refund", fail_until=99, error=PermanentError))
    handler("inbound", "order.created")(counted("crm", fail_until=2))
    harness.event("evt_1")
    harness.drain()
    # refund is not retried; crm keeps its own retries and succeeds on its second run.
    assert (runs(redis, "audit"), runs(redis, "refund"), runs(redis, "crm")) == (1, 1, 2)
    record = record_of(redis)
    assert (record.status, record.attempts) == ("dead", 2)
    assert record.handlers == {
        "handlers.audit": "done",
        "handlers.refund": "permanent",
        "handlers.crm": "done",
    }
    assert "handlers.refund: failed permanently" in record.last_error
    job = Job.fetch(job_id_for("inbound", "evt_1"), connection=redis)
    assert job.retries_left == 0 and job.meta["permanent"] is True


def test_a_permanent_error_with_no_other_handler_waiting_dead_letters_at_once(
    make_harness: Callable[..., Harness],
    counted: Callable[..., Callable[[Event], None]],
    redis: Redis,
) -> None:
    harness = make_harness(webhook_max_retries=4)
    handler("inbound", "order.created")(counted("audit"))
    handler("inbound", "order.created")(counted("refund", fail_until=99, error=PermanentError))
    harness.event("evt_1")
    harness.drain()
    record = record_of(redis)
    assert (record.status, record.attempts) == ("dead", 1)
    assert record.last_error == "handlers.refund: PermanentError: refund failed on run 1"


def test_a_requeue_reruns_only_the_failed_handler_and_all_handlers_reruns_both(
    make_harness: Callable[..., Harness],
    counted: Callable[..., Callable[[Event], None]],
    redis: Redis,
) -> None:
    harness = make_harness(webhook_max_retries=1)
    handler("inbound", "order.created")(counted("audit"))
    handler("inbound", "order.created")(counted("crm"))
    redis.set("fail:crm", 1)
    harness.event("evt_1")
    harness.drain()
    job_id = job_id_for("inbound", "evt_1")
    assert FailedJobRegistry("webhooks", connection=redis).get_job_ids() == [job_id]
    assert (runs(redis, "audit"), runs(redis, "crm")) == (1, 2)
    dead = DeadLetters(harness.settings, redis)

    assert dead.requeue(job_id)
    harness.drain()  # crm still fails: dead again, audit never ran again
    assert (runs(redis, "audit"), runs(redis, "crm")) == (1, 4)

    redis.delete("fail:crm")
    assert dead.requeue(job_id, all_handlers=True)
    harness.drain()
    assert (runs(redis, "audit"), runs(redis, "crm")) == (2, 5)
    record = record_of(redis)
    # Where each stands now: not what the failed attempts before the requeue had written.
    assert (record.status, record.handlers) == (
        "done",
        {"handlers.audit": "done", "handlers.crm": "done"},
    )


@pytest.mark.parametrize("mode", MODES)
def test_a_handler_deployed_while_the_event_waits_for_its_retry_runs_on_it(
    make_harness: Callable[..., Harness],
    counted: Callable[..., Callable[[Event], None]],
    redis: Redis,
    mode: str,
) -> None:
    harness = make_harness(webhook_worker_mode=mode, webhook_retry_intervals="3600")
    handler("inbound", "order.created")(counted("audit"))
    handler("inbound", "order.created")(counted("crm", fail_until=2))
    harness.event("evt_1")
    harness.drain()
    assert (runs(redis, "audit"), runs(redis, "crm")) == (1, 1)

    handler("inbound", "*")(counted("analytics"))  # the next deploy adds it
    make_retry_due(redis, job_id_for("inbound", "evt_1"))
    harness.drain()
    assert (runs(redis, "audit"), runs(redis, "crm"), runs(redis, "analytics")) == (1, 2, 1)
    assert attempts_run(redis, "analytics") == [2]
    assert turns_by_attempt(record_of(redis))[1] == [
        ("handlers.crm", "done"),
        ("handlers.analytics", "done"),
    ]


@pytest.mark.parametrize("mode", MODES)
def test_a_failed_handler_removed_before_the_retry_is_skipped_and_recorded_removed(
    make_harness: Callable[..., Harness],
    counted: Callable[..., Callable[[Event], None]],
    redis: Redis,
    mode: str,
) -> None:
    harness = make_harness(webhook_worker_mode=mode, webhook_retry_intervals="3600")
    handler("inbound", "order.created")(counted("audit"))
    before = registry.snapshot()
    handler("inbound", "order.created")(counted("legacy", fail_until=99))
    harness.event("evt_1")
    harness.drain()
    assert runs(redis, "legacy") == 1

    registry.restore(before)  # the next deploy drops it
    make_retry_due(redis, job_id_for("inbound", "evt_1"))
    harness.drain()
    assert (runs(redis, "audit"), runs(redis, "legacy")) == (1, 1)
    record = record_of(redis)
    assert (record.status, record.attempts) == ("done", 2)
    assert turns_by_attempt(record)[1] == [("handlers.legacy", "removed")]
    assert record.handlers["handlers.legacy"] == "removed"


def test_a_timeout_in_one_handler_ends_the_attempt_and_the_rest_run_on_the_retry(
    make_harness: Callable[..., Harness],
    counted: Callable[..., Callable[[Event], None]],
    redis: Redis,
) -> None:
    import time

    harness = make_harness(webhook_job_timeout=1, webhook_max_retries=1)
    url = harness.settings.redis_url

    @handler("inbound", "order.created")
    def slow_once(event: Event) -> None:
        if Redis.from_url(url).incr("runs:slow") == 1:
            time.sleep(30)

    handler("inbound", "order.created")(counted("mail"))
    harness.event("evt_1")
    harness.drain()
    assert attempts_run(redis, "mail") == [2]  # no handler runs past the spent deadline
    first = record_of(redis).attempt_log[0]
    assert [(t.handler, str(t.state)) for t in first.turns] == [(handler_name(slow_once), "failed")]
    assert "JobTimeoutException" in first.error


def test_the_log_line_of_an_attempt_names_each_handlers_turn(
    make_harness: Callable[..., Harness],
    counted: Callable[..., Callable[[Event], None]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    import json

    harness = make_harness(webhook_max_retries=0, webhook_log_format="json")
    handler("inbound", "order.created")(counted("audit"))
    handler("inbound", "order.created")(counted("crm", fail_until=99))
    harness.event("evt_1")
    harness.drain()
    lines = [json.loads(x) for x in capsys.readouterr().err.splitlines() if x.startswith("{")]
    dead = next(x for x in lines if x.get("state") == "dead_lettered")
    assert dead["handlers"] == {"handlers.audit": "done", "handlers.crm": "failed"}
    assert dead["error"] == "handlers.crm: RuntimeError: crm failed on run 1"


def test_an_attempts_record_keeps_when_it_ended(
    make_harness: Callable[..., Harness],
    counted: Callable[..., Callable[[Event], None]],
    redis: Redis,
) -> None:
    harness = make_harness()
    handler("inbound", "order.created")(counted("audit"))
    before = datetime.now(UTC).timestamp()
    harness.event("evt_1")
    harness.drain()
    (attempt,) = record_of(redis).attempt_log
    assert before <= attempt.ended_at <= datetime.now(UTC).timestamp()
    assert (attempt.number, attempt.status, attempt.error) == (1, "done", "")


def test_a_child_killed_in_its_second_handler_keeps_the_first_ones_success(
    make_harness: Callable[..., Harness],
    counted: Callable[..., Callable[[Event], None]],
    redis: Redis,
) -> None:
    """The batch child alone dies (the OOM killer, a segfault): the worker settles the
    attempt from the meta the child last wrote, not from what it reported at the start."""
    import os
    import signal

    harness = make_harness(webhook_worker_mode="fork")
    handler("inbound", "order.created")(counted("audit"))
    url = harness.settings.redis_url

    @handler("inbound", "order.created")
    def crash_once(event: Event) -> None:
        if Redis.from_url(url).incr("runs:crash") == 1:
            os.kill(os.getpid(), signal.SIGKILL)

    harness.event("evt_1")
    harness.drain()
    assert runs(redis, "audit") == 1
    record = record_of(redis)
    assert (record.status, record.attempts) == ("done", 2)
    assert turns_by_attempt(record)[0] == [("handlers.audit", "done")]
    assert "Work-horse terminated" in record.attempt_log[0].error
