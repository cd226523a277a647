"""The version guard: out-of-order deliveries never overwrite newer state."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from redis import Redis
from rq.job import Job

from app.keys import job_id_for
from app.settings import Settings
from tests.conftest import event_body
from workers import Event, handler, newer_version
from workers.registry import HandlerRegistry


def subscription(event_id: str, version: object, plan: str) -> bytes:
    return event_body(
        event_id,
        "customer.subscription.updated",
        data={"object": {"id": "sub_1", "plan": plan, "version": version}},
    )


@pytest.fixture
def applied(make_settings: Callable[..., Settings]) -> Callable[[Redis], list[str]]:
    url = make_settings().redis_url

    @handler(
        "inbound",
        "customer.subscription.updated",
        entity="data.object.id",
        version="data.object.version",
    )
    def apply(event: Event) -> None:
        Redis.from_url(url).rpush("applied", event.payload["data"]["object"]["plan"])

    return lambda redis: [x.decode() for x in redis.lrange("applied", 0, -1)]


def test_reordered_and_repeated_deliveries_apply_only_newer_versions(
    make_settings: Callable[..., Settings],
    make_client: Callable[..., TestClient],
    post_event: Callable[..., Any],
    run_worker: Callable[[Settings], Any],
    redis: Redis,
    applied: Callable[[Redis], list[str]],
) -> None:
    settings = make_settings()
    client = make_client(settings)
    for event_id, version, plan in [
        ("e3", 3, "pro"),
        ("e1", 1, "free"),
        ("e2", 2, "basic"),
        ("e3-again", 3, "pro-again"),
    ]:
        post_event(client, subscription(event_id, version, plan))
        run_worker(settings)  # one at a time, in this (wrong) order
    assert applied(redis) == ["pro"]
    states = {
        e: Job.fetch(job_id_for("inbound", e), connection=redis).meta["state"]
        for e in ("e3", "e1", "e2", "e3-again")
    }
    assert states == {"e3": "done", "e1": "stale", "e2": "stale", "e3-again": "stale"}
    assert redis.hget("webhook:stats:inbound", "stale") == b"3"
    assert redis.hget("webhook:event:inbound:e1", "status") == b"stale"


def test_a_newer_version_after_an_older_one_is_applied(
    make_settings: Callable[..., Settings],
    make_client: Callable[..., TestClient],
    post_event: Callable[..., Any],
    run_worker: Callable[[Settings], Any],
    redis: Redis,
    applied: Callable[[Redis], list[str]],
) -> None:
    settings = make_settings()
    client = make_client(settings)
    post_event(client, subscription("e1", "2026-01-01T00:00:00+00:00", "old"))
    post_event(client, subscription("e2", "2026-06-01T00:00:00+00:00", "new"))
    run_worker(settings)
    assert applied(redis) == ["old", "new"]


def test_a_retry_of_the_event_holding_the_version_still_applies(
    make_settings: Callable[..., Settings],
    make_client: Callable[..., TestClient],
    post_event: Callable[..., Any],
    run_worker: Callable[[Settings], Any],
    redis: Redis,
) -> None:
    settings = make_settings()
    url = settings.redis_url

    @handler(
        "inbound",
        "customer.subscription.updated",
        entity="data.object.id",
        version="data.object.version",
    )
    def fails_once(event: Event) -> None:
        r = Redis.from_url(url)
        if r.incr("tries") == 1:
            raise RuntimeError("first attempt fails")
        r.rpush("applied", "ok")

    post_event(make_client(settings), subscription("e5", 5, "x"))
    run_worker(settings)
    assert redis.lrange("applied", 0, -1) == [b"ok"]


def test_an_event_without_the_declared_version_is_dead_lettered_with_the_reason(
    make_settings: Callable[..., Settings],
    make_client: Callable[..., TestClient],
    post_event: Callable[..., Any],
    run_worker: Callable[[Settings], Any],
    redis: Redis,
    applied: Callable[[Redis], list[str]],
) -> None:
    settings = make_settings()
    post_event(make_client(settings), event_body("e9", "customer.subscription.updated"))
    run_worker(settings)
    job = Job.fetch(job_id_for("inbound", "e9"), connection=redis)
    assert (
        job.meta["state"] == "dead"
        and "'data.object.id' is not in the event" in job.meta["last_error"]
    )


def test_newer_version_can_be_called_inside_a_handler(
    make_settings: Callable[..., Settings],
    make_client: Callable[..., TestClient],
    post_event: Callable[..., Any],
    run_worker: Callable[[Settings], Any],
    redis: Redis,
) -> None:
    settings = make_settings()
    url = settings.redis_url

    @handler("inbound", "order.updated")
    def custom(event: Event) -> None:
        key = lambda e: f"{e.payload['shop']}/{e.payload['order']}"  # noqa: E731
        if newer_version(event, entity=key, version="updated_at"):
            Redis.from_url(url).rpush("applied", json.dumps(event.payload["updated_at"]))

    client = make_client(settings)
    for n, stamp in enumerate([20, 10, 30]):
        post_event(
            client, event_body(f"o{n}", "order.updated", shop="s", order=1, updated_at=stamp)
        )
        run_worker(settings)
    assert [json.loads(x) for x in redis.lrange("applied", 0, -1)] == [20, 30]


def test_newer_version_outside_a_job_is_an_error() -> None:
    from datetime import UTC, datetime

    event = Event("s", "e", "t", {"id": 1, "v": 1}, b"", {}, datetime.now(UTC), 1)
    with pytest.raises(RuntimeError, match="inside a handler"):
        newer_version(event, "id", "v")


def test_a_guard_needs_both_entity_and_version() -> None:
    with pytest.raises(ValueError, match="both entity= and version="):
        HandlerRegistry().handler("s", "t", entity="data.object.id")
