"""An event no handler takes (`runner.py`): nothing runs, so nothing is written for it before
its settlement (no attempt in its meta, no `running` in the ledger), and it settles as
ignored with its attempt counted, as one a handler takes settles done."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from redis import Redis
from rq.job import Job, JobStatus

from app.keys import job_id_for
from tests.conftest import Harness
from workers import Event, handler
from workers.runtime.run import build_worker
from workers.runtime.settlement import settle_batch
from workers.runtime.take import take

pytestmark = pytest.mark.usefixtures("signals_kept")


def test_an_event_no_handler_takes_is_written_once_when_it_settles(
    make_harness: Callable[..., Harness], redis: Redis
) -> None:
    harness = make_harness(webhook_worker_mode="simple")
    worker = build_worker(harness.settings, redis)
    seen: dict[str, dict[str, object]] = {}

    @handler("inbound", "order.created")
    def look(event: Event) -> None:
        # While a handled event runs, the one before it (taken by no handler) is as queued.
        ignored = Job.fetch(job_id_for("inbound", "quiet"), connection=redis)
        seen["meta"] = dict(ignored.meta)
        seen["ledger"] = {"status": redis.hget("webhook:event:inbound:quiet", "status")}
        seen["mine"] = {"status": redis.hget("webhook:event:inbound:loud", "status")}

    harness.event("quiet", "order.nobody")
    harness.event("loud", "order.created")
    queue = worker.queues[0]
    batch = take(redis, queue, 10, None)
    assert batch is not None and len(batch.entries) == 2
    worker._batch = batch
    worker.execute_job(batch.entries[0].job, queue)
    settle_batch(worker, batch)

    assert seen["meta"].get("attempts", 0) == 0 and seen["ledger"]["status"] == b"queued"
    assert seen["mine"]["status"] == b"running"  # one a handler takes: said at its start
    quiet = Job.fetch(job_id_for("inbound", "quiet"), connection=redis)
    assert quiet.get_status() == JobStatus.FINISHED
    assert quiet.meta["attempts"] == 1 and quiet.meta["state"] == "ignored"
    assert redis.hget("webhook:event:inbound:quiet", "status") == b"ignored"
