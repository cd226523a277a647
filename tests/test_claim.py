"""The claim and the enqueue commit together or not at all, and one event makes one job."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from redis import Redis
from rq import Queue

from app.intake import Intake
from app.keys import job_id_for
from tests.conftest import event_body, sign
from tests.processes import RedisProxy, Stack
from workers.dev.redis_server import RedisServer

Post = Callable[..., Any]
JOB_KEY = "rq:job:" + job_id_for("inbound", "evt_1")
SEEN_KEY = "webhook:seen:inbound:evt_1"


@pytest.fixture
def proxy(
    redis_server: RedisServer, redis: Redis, make_proxy: Callable[[int], RedisProxy]
) -> RedisProxy:
    return make_proxy(redis_server.port)


def test_a_failure_inside_the_claim_script_leaves_neither_claim_nor_job(
    make_client: Callable[..., TestClient], post_event: Post, redis: Redis
) -> None:
    client = make_client()
    redis.set("rq:queue:webhooks", "not a list")  # makes the enqueue step fail
    assert post_event(client, event_body("evt_1")).status_code == 503
    assert redis.exists(SEEN_KEY, JOB_KEY) == 0

    redis.delete("rq:queue:webhooks")
    assert post_event(client, event_body("evt_1")).json()["status"] == "accepted"
    assert Queue("webhooks", connection=redis).job_ids == [job_id_for("inbound", "evt_1")]


def test_a_connection_cut_before_the_claim_leaves_nothing_and_the_retry_is_accepted(
    make_client: Callable[..., TestClient], post_event: Post, redis: Redis, proxy: RedisProxy
) -> None:
    client = make_client(redis_url=proxy.url)
    proxy.drop_requests_with = b"EVAL"
    assert post_event(client, event_body("evt_1")).status_code == 503
    assert redis.exists(SEEN_KEY, JOB_KEY) == 0

    proxy.drop_requests_with = None
    assert post_event(client, event_body("evt_1")).json()["status"] == "accepted"
    assert redis.exists(SEEN_KEY, JOB_KEY) == 2


def test_a_reply_lost_after_the_enqueue_is_503_then_the_retry_is_a_duplicate(
    make_client: Callable[..., TestClient],
    make_settings: Callable[..., Any],
    post_event: Post,
    redis: Redis,
    proxy: RedisProxy,
) -> None:
    settings = make_settings(redis_url=proxy.url)
    redis.script_load(Intake(settings, redis).claim_lua)  # so the script runs on the first EVALSHA
    client = make_client(settings)
    proxy.drop_replies_after = b"EVALSHA"
    first = post_event(client, event_body("evt_1"))
    proxy.drop_replies_after = None
    # The receiver could not know the event was queued, so it did not promise it...
    assert first.status_code == 503
    assert redis.exists(SEEN_KEY, JOB_KEY) == 2
    # ...and the sender's retry finds it: acknowledged, never queued twice.
    assert post_event(client, event_body("evt_1")).json()["status"] == "duplicate"
    assert Queue("webhooks", connection=redis).job_ids == [job_id_for("inbound", "evt_1")]


@pytest.fixture
def web(redis_server: RedisServer, redis: Redis, make_stack: Callable[..., Stack]) -> str:
    return make_stack(redis_server.url).start("web").url


def test_fifty_concurrent_deliveries_of_one_event_make_exactly_one_job(
    web: str, redis: Redis
) -> None:
    body = event_body("evt_race")
    headers = {"X-Signature-256": sign(body)}
    barrier = threading.Barrier(50)

    def deliver(_: int) -> str:
        with httpx.Client(timeout=10) as http:
            barrier.wait()
            response = http.post(f"{web}/webhooks/inbound", content=body, headers=headers)
        assert response.status_code == 200
        return str(response.json()["status"])

    with ThreadPoolExecutor(max_workers=50) as pool:
        statuses = list(pool.map(deliver, range(50)))

    assert sorted(statuses).count("accepted") == 1
    assert statuses.count("duplicate") == 49
    assert Queue("webhooks", connection=redis).job_ids == [job_id_for("inbound", "evt_race")]
