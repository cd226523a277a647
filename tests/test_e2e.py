"""End to end: the Procfile's web, worker and dashboard processes against a real Redis."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from redis import Redis
from rq.job import Job

from app.keys import job_id_for
from tests.conftest import AUTH, SECRET
from tests.processes import Stack, effects, send, start, wait_http, wait_until
from workers.dev.redis_server import RedisServer, free_port

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("mode", ["fork", "simple"])
def test_signed_events_flow_through_the_real_processes_exactly_once(
    redis_server: RedisServer, redis: Redis, make_stack: Callable[..., Stack], mode: str
) -> None:
    """In either worker mode: in simple mode each batch's settlement is applied while the
    next batch runs (`workers/runtime/settling.py`)."""
    stack = make_stack(redis_server.url, WEBHOOK_MAX_RETRIES="1", WEBHOOK_WORKER_MODE=mode)
    web, worker, dashboard = stack.start("web"), stack.start("worker"), stack.start("dashboard")
    wait_http(dashboard.url + "/", dashboard, auth=AUTH)

    ids = [f"evt_{n}" for n in range(20)]
    for event_id in ids + ids[::2]:  # every other event delivered twice
        assert send(web.url, event_id).status_code == 200
    wait_until(lambda: all(effects(redis, i) for i in ids), 30, "every handler effect")
    wait_until(lambda: redis.llen("rq:queue:webhooks") == 0, 10, "an empty queue")
    assert [effects(redis, i) for i in ids] == [1] * len(ids)

    # A failing event is retried once (1 s later, by the scheduler), then dead-lettered...
    redis.set("fail:evt_flaky", 1)
    assert send(web.url, "evt_flaky", "order.flaky").status_code == 200
    job_id = job_id_for("inbound", "evt_flaky")
    failed_url = f"{dashboard.url}/0/data/jobs/webhooks/failed/10/asc/1.json"
    wait_until(lambda: job_id in httpx.get(failed_url, auth=AUTH).text, 30, "a dead letter")
    assert effects(redis, "evt_flaky") == 2
    job_json = httpx.get(f"{dashboard.url}/0/data/job/{job_id}.json", auth=AUTH).json()
    assert "evt_flaky" in job_json["metadata"] and "downstream is down" in job_json["exc_info"]

    # ...and once the cause is fixed, the dashboard's requeue button gets it done.
    redis.delete("fail:evt_flaky")
    requeued = httpx.post(
        f"{dashboard.url}/job/{job_id}/requeue", auth=AUTH, headers={"Origin": dashboard.url}
    )
    assert requeued.json() == {"status": "OK"}
    wait_until(
        lambda: Job.fetch(job_id, connection=redis).meta.get("state") == "done",
        30,
        "the requeued event to be done",
    )
    assert effects(redis, "evt_flaky") == 3
    assert '"state": "done"' in worker.output()
    # Requeued by the dashboard itself, with the full budget (`dashboard_requeue.py`).
    assert '"state": "requeued"' in dashboard.output()
    assert '"by": "rq-dashboard"' in dashboard.output()


@pytest.mark.parametrize("name", ["web", "worker", "dashboard"])
@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"WEBHOOK_SOURCES": "stripe:hmac"}, "WEBHOOK_SECRET_STRIPE is not set"),
        (
            {"WEBHOOK_SIGNING_SECRET": "replace-me-with-a-long-random-string"},
            "WEBHOOK_SIGNING_SECRET is still the placeholder",
        ),
        ({"WEBHOOK_REPLAY_TOKEN": "too-short"}, "WEBHOOK_REPLAY_TOKEN must be at least 32"),
        ({"RQ_DASHBOARD_PASSWORD": "replace-me"}, "RQ_DASHBOARD_PASSWORD is still the placeholder"),
        ({"WEBHOOK_DEDUPE_TTL": "a-day"}, "WEBHOOK_DEDUPE_TTL: Input should be a valid integer"),
    ],
    ids=["missing", "placeholder", "short-token", "dashboard-placeholder", "malformed"],
)
def test_every_process_refuses_a_bad_configuration_in_one_line(
    redis_server: RedisServer, tmp_path: Path, name: str, env: dict[str, str], message: str
) -> None:
    base = {
        "PORT": str(free_port()),
        "REDIS_URL": redis_server.url,
        "WEBHOOK_SIGNING_SECRET": SECRET,
        "RQ_DASHBOARD_USERNAME": AUTH[0],
        "RQ_DASHBOARD_PASSWORD": AUTH[1],
    }
    process = start(name, {**base, **env}, tmp_path)
    try:
        assert process.popen.wait(30) != 0
    finally:
        process.stop()
    output = process.output()
    assert [line for line in output.splitlines() if message in line], output
    assert "Traceback" not in output and SECRET not in output
    assert "replace-me" not in output.replace("is still the placeholder", "")
