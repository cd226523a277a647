"""rq-dashboard's delete and empty of the webhook queue's finished jobs: only what is still
finished, in the same atomic step. A replay (the command, the Events page) enqueues a
finished event again by writing a new job over it; RQ's own delete, reading the job first,
would delete that replay's job, or leave its queue entry without a hash."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from redis import Redis
from rq.job import Job

from app.keys import job_id_for
from tests.conftest import AUTH, Harness
from tests.purge_race import EVENT_ID, EVENT_TYPE, JOB_ID, RECORD, Flaky, before_the_purge_writes
from workers import Event, handler
from workers.ops.dashboard import create_dashboard
from workers.ops.replay import LedgerReplay, Replayed

ORIGIN = {"Origin": "http://localhost"}
FINISHED = "rq:finished:webhooks"


@pytest.fixture
def finished(make_harness: Callable[..., Harness], tmp_path: Path) -> tuple[Harness, Flaky]:
    """Two events of `fail.raced` that ran and finished: the raced one and another."""
    harness = make_harness()
    state = Flaky(tmp_path / "raced-runs.log", fail=False)

    @handler("inbound", EVENT_TYPE)
    def raced(event: Event) -> None:
        with state.log.open("a") as log:
            log.write(f"{event.id}\n")

    for event_id in (EVENT_ID, "evt_other"):
        assert harness.event(event_id, EVENT_TYPE).status_code == 200
    harness.drain()
    assert sorted(finished_ids(harness.redis)) == sorted(
        [JOB_ID.encode(), job_id_for("inbound", "evt_other").encode()]
    )
    return harness, state


def finished_ids(redis: Redis) -> list[bytes]:
    return list(redis.zrange(FINISHED, 0, -1))


def replay(harness: Harness) -> Callable[[Redis], None]:
    """The raced event replayed by a second operator, every handler again, on its own
    connection."""

    def act(other: Redis) -> None:
        replayer = LedgerReplay(harness.settings, other, by="events-page", all_handlers=True)
        record = replayer.ledger.get("inbound", EVENT_ID)
        assert record is not None
        assert replayer.replay(harness.settings.sources["inbound"], record) is Replayed.ENQUEUED

    return act


def assert_replayed_and_runs_once(harness: Harness, state: Flaky) -> None:
    """The replay's job is whole: its hash and queue entry are there, its record says
    queued, and the worker runs its handler once more."""
    redis = harness.redis
    assert redis.hget(f"rq:job:{JOB_ID}", "status") == b"queued"
    assert redis.lrange("rq:queue:webhooks", 0, -1) == [JOB_ID.encode()]
    assert redis.hget(RECORD, "status") == b"queued"
    runs = state.runs
    harness.drain()
    assert state.runs == runs + 1
    assert redis.hget(RECORD, "status") == b"done"


def test_a_finished_event_is_deleted_whole_from_the_dashboard(
    finished: tuple[Harness, Flaky], caplog: pytest.LogCaptureFixture
) -> None:
    harness, _ = finished
    client = create_dashboard(harness.settings).test_client()
    response = client.post(f"/job/{JOB_ID}/delete", auth=AUTH, headers=ORIGIN)
    assert response.status_code == 200 and response.get_json()["status"] == "OK"
    assert harness.redis.exists(f"rq:job:{JOB_ID}", f"rq:results:{JOB_ID}") == 0
    assert finished_ids(harness.redis) == [job_id_for("inbound", "evt_other").encode()]
    [line] = [r for r in caplog.records if r.getMessage() == "dashboard action"]
    assert (line.action, line.job_id, line.count) == ("delete", JOB_ID, 1)  # type: ignore[attr-defined]


def test_deleting_a_finished_event_replayed_meanwhile_deletes_nothing(
    finished: tuple[Harness, Flaky], caplog: pytest.LogCaptureFixture
) -> None:
    harness, state = finished
    client = create_dashboard(harness.settings).test_client()
    with before_the_purge_writes(harness.settings, replay(harness)):
        response = client.post(f"/job/{JOB_ID}/delete", auth=AUTH, headers=ORIGIN)
    assert response.status_code == 409, response.status_code
    assert "no longer finished (replayed meanwhile)" in response.get_data(as_text=True)
    assert not [r for r in caplog.records if r.getMessage() == "dashboard action"]
    assert_replayed_and_runs_once(harness, state)


def test_emptying_the_finished_jobs_skips_one_replayed_meanwhile(
    finished: tuple[Harness, Flaky], caplog: pytest.LogCaptureFixture
) -> None:
    harness, state = finished
    client = create_dashboard(harness.settings).test_client()
    with before_the_purge_writes(harness.settings, replay(harness)):
        response = client.post("/queue/webhooks/finished/empty", auth=AUTH, headers=ORIGIN)
    assert response.status_code == 200 and response.get_json()["status"] == "OK"
    assert harness.redis.exists(f"rq:job:{job_id_for('inbound', 'evt_other')}") == 0
    [line] = [r for r in caplog.records if r.getMessage() == "dashboard action"]
    logged = (line.action, line.registry, line.count, line.skipped)  # type: ignore[attr-defined]
    assert logged == ("empty", "finished", 1, 1)
    assert_replayed_and_runs_once(harness, state)


def test_a_canceled_job_is_deleted_whole_from_the_dashboard(
    make_harness: Callable[..., Harness],
) -> None:
    harness = make_harness()
    assert harness.event("evt_canceled").status_code == 200
    job_id = job_id_for("inbound", "evt_canceled")
    Job.fetch(job_id, connection=harness.redis).cancel()  # as `rq` or an operator's shell does
    assert harness.redis.zrange("rq:canceled:webhooks", 0, -1) == [job_id.encode()]
    client = create_dashboard(harness.settings).test_client()
    response = client.post(f"/job/{job_id}/delete", auth=AUTH, headers=ORIGIN)
    assert response.status_code == 200 and response.get_json()["status"] == "OK"
    assert harness.redis.exists(f"rq:job:{job_id}") == 0
    assert harness.redis.zrange("rq:canceled:webhooks", 0, -1) == []
