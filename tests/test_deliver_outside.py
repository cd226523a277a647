"""The job function (`workers/runtime/deliver.py`) outside our worker: run by RQ's own worker
(no batch runner to stream its checkpoints), or called directly (no job at all)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from redis import Redis
from rq import Queue
from rq.job import Job

from app.jobstate import EventCall
from app.keys import job_id_for
from tests.conftest import Harness, drain_with_rqs_worker
from workers import Event, handler
from workers.registry import handler_name
from workers.runtime.deliver import deliver


def first(event: Event) -> None:
    pass


def test_under_rqs_own_worker_a_handlers_success_is_written_before_the_next_runs(
    make_harness: Callable[..., Harness], redis: Redis
) -> None:
    harness = make_harness()
    seen: list[dict[str, str]] = []

    def second(event: Event) -> None:
        # What a worker killed now would leave: the first handler's success, in Redis.
        job = Job.fetch(job_id_for("inbound", "r0"), connection=redis)
        seen.append(job.meta.get("handlers", {}))

    handler("inbound", "order.created")(first)
    handler("inbound", "order.created")(second)
    harness.event("r0")
    queue = Queue("webhooks", connection=redis)

    drain_with_rqs_worker(queue)

    assert seen == [{handler_name(first): "done"}]


def test_called_without_a_job_the_handlers_run_and_nothing_is_recorded(redis: Redis) -> None:
    got: list[str] = []
    handler("inbound", "order.created")(lambda event: got.append(event.id))
    call = EventCall("inbound", "d0", "order.created", b'{"id": "d0"}', {}, 1.0)

    assert deliver(*call.args()) == "done"
    assert got == ["d0"]
    assert redis.keys("*") == []


def test_called_without_a_job_a_failing_handler_raises(redis: Redis) -> None:
    def broken(event: Event) -> None:
        raise ValueError("no")

    handler("inbound", "order.created")(broken)
    call = EventCall("inbound", "d1", "order.created", b'{"id": "d1"}', {}, 1.0)

    with pytest.raises(Exception, match="no"):
        deliver(*call.args())
    assert redis.keys("*") == []
