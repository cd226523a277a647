"""rq-dashboard's requeue buttons beside the webhook queue (`workers/ops/dashboard_requeue.py`):
a dead letter requeued meanwhile is not queued twice, the other queues' jobs stay
rq-dashboard's, and an id that names no job (gone, or hostile markup RQ will not read) is a
404, never a 500, for Requeue and Delete. Through Flask's test client against a real Redis."""

from __future__ import annotations

from redis import Redis
from rq import Queue
from rq.job import JobStatus
from rq.registry import FailedJobRegistry

from app.keys import job_id_for
from tests.conftest import AUTH, drain_with_rqs_worker
from tests.events_site import ORIGIN, Site, make_site, site
from workers.ops.deadletters import DeadLetters

__all__ = ["make_site", "site"]  # fixtures


def dead_letter(site: Site, event_id: str) -> str:
    site.harness.event(event_id, "fail.sync")
    site.harness.drain()
    return job_id_for("inbound", event_id)


def queued(redis: Redis, queue: str, job_id: str) -> int:
    return [j.decode() for j in redis.lrange(f"rq:queue:{queue}", 0, -1)].count(job_id)


def failed_elsewhere(redis: Redis) -> str:
    """A job of another queue that failed under RQ's own worker."""
    other = Queue("other", connection=redis)
    job = other.enqueue("builtins.int", "not a number")
    drain_with_rqs_worker(other)
    assert job.get_status(refresh=True) == JobStatus.FAILED
    return job.id


def test_a_dead_letter_requeued_meanwhile_is_a_409_and_queued_once(site: Site) -> None:
    job_id = dead_letter(site, "evt_twice")
    assert DeadLetters(site.harness.settings, site.harness.redis).requeue(job_id, by="another")

    answer = site.client.post(f"/job/{job_id}/requeue", auth=AUTH, headers=ORIGIN)

    assert answer.status_code == 409
    assert "no longer a dead letter" in answer.get_data(as_text=True)
    assert queued(site.harness.redis, "webhooks", job_id) == 1


def test_a_job_of_another_queue_is_requeued_by_rq_dashboard_itself(site: Site) -> None:
    redis = site.harness.redis
    job_id = failed_elsewhere(redis)

    answer = site.client.post(f"/job/{job_id}/requeue", auth=AUTH, headers=ORIGIN)

    assert answer.status_code == 200
    assert queued(redis, "other", job_id) == 1
    assert job_id not in FailedJobRegistry("other", connection=redis)


def test_requeue_all_of_another_queue_is_rq_dashboards_own_and_leaves_the_dead_letters(
    site: Site,
) -> None:
    redis = site.harness.redis
    dead = dead_letter(site, "evt_stays")
    other = failed_elsewhere(redis)

    answer = site.client.post("/requeue/other", auth=AUTH, headers=ORIGIN)

    assert answer.status_code == 200
    assert queued(redis, "other", other) == 1
    assert dead in FailedJobRegistry("webhooks", connection=redis)
    assert queued(redis, "webhooks", dead) == 0


def test_a_requeue_of_a_job_that_no_longer_exists_is_a_404_not_a_500(site: Site) -> None:
    hostile = "<img src=x onerror=alert(1)>"
    answer = site.client.post(f"/job/{hostile}/requeue", auth=AUTH, headers=ORIGIN)
    assert answer.status_code == 404, answer.status_code
    assert hostile not in answer.get_data(as_text=True)  # the id is not echoed
    assert answer.mimetype == "text/plain"

    answer = site.client.post("/job/no-such-job/requeue", auth=AUTH, headers=ORIGIN)

    assert answer.status_code == 404, answer.status_code
    assert "no such job" in answer.get_data(as_text=True)
    assert queued(site.harness.redis, "webhooks", "no-such-job") == 0


def test_a_delete_of_an_id_rq_cannot_read_is_a_404_not_a_500(site: Site) -> None:
    hostile = "<img src=x onerror=alert(1)>"
    answer = site.client.post(f"/job/{hostile}/delete", auth=AUTH, headers=ORIGIN)
    assert answer.status_code == 404, answer.status_code
    assert hostile not in answer.get_data(as_text=True)
