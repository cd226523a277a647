"""WEBHOOK_WORKER_MODE=simple keeps every worker behaviour, without the fork per job."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from redis import Redis
from rq.job import Job, JobStatus
from rq.registry import FailedJobRegistry

from app.keys import job_id_for
from app.settings import Settings
from tests.conftest import drain, event_body
from workers import Event, PermanentError, handler
from workers.ops.deadletters import DeadLetters
from workers.runtime.run import build_worker


@pytest.fixture
def settings(make_settings: Callable[..., Settings]) -> Settings:
    return make_settings(webhook_worker_mode="simple")


@pytest.fixture
def send(
    make_client: Callable[..., TestClient], settings: Settings, post_event: Callable[..., Any]
) -> Callable[..., str]:
    client = make_client(settings)

    def deliver(event_id: str, event_type: str = "order.created") -> str:
        assert post_event(client, event_body(event_id, event_type)).status_code == 200
        return job_id_for("inbound", event_id)

    return deliver


def test_simple_mode_runs_handlers_in_the_worker_process(settings: Settings, redis: Redis) -> None:
    assert build_worker(settings, connection=redis).isolated is False


def test_simple_mode_settles_done_and_ignored(
    settings: Settings, send: Callable[..., str], redis: Redis
) -> None:
    url = settings.redis_url

    @handler("inbound", "order.created")
    def count(event: Event) -> None:
        Redis.from_url(url).incr(f"runs:{event.id}")

    done, ignored = send("e1"), send("e2", "other.type")
    drain(settings, redis)
    assert redis.get("runs:e1") == b"1"
    assert Job.fetch(done, connection=redis).get_status() == JobStatus.FINISHED
    assert Job.fetch(ignored, connection=redis).meta["state"] == "ignored"
    assert redis.hget("webhook:event:inbound:e1", "status") == b"done"
    assert redis.hget("webhook:stats:inbound", "done") == b"1"


def test_simple_mode_retries_dead_letters_and_requeues_with_a_full_budget(
    settings: Settings, send: Callable[..., str], redis: Redis
) -> None:
    url = settings.redis_url

    @handler("inbound", "order.created")
    def fail(event: Event) -> None:
        Redis.from_url(url).incr(f"runs:{event.id}")
        raise RuntimeError("down")

    job_id = send("e3")
    drain(settings, redis)
    assert redis.get("runs:e3") == b"3"
    assert job_id in FailedJobRegistry("webhooks", connection=redis)
    assert redis.hget("webhook:event:inbound:e3", "status") == b"dead"
    DeadLetters(settings, redis).requeue(job_id)
    drain(settings, redis)
    assert redis.get("runs:e3") == b"6"


def test_simple_mode_dead_letters_a_permanent_error_at_once(
    settings: Settings, send: Callable[..., str], redis: Redis
) -> None:
    @handler("inbound", "order.created")
    def reject(event: Event) -> None:
        raise PermanentError("never")

    job_id = send("e4")
    drain(settings, redis)
    job = Job.fetch(job_id, connection=redis)
    assert job.meta["attempts"] == 1 and job.meta["permanent"] is True
    assert job_id in FailedJobRegistry("webhooks", connection=redis)
