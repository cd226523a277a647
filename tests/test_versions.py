"""The version guard: out-of-order deliveries never overwrite newer state."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from redis import Redis
from rq.job import Job

from app.keys import job_id_for
from tests.conftest import Harness, event_body
from workers import Event, handler, newer_version
from workers.registry import HandlerRegistry

Make = Callable[..., Harness]


def subscription(event_id: str, version: object, plan: str) -> bytes:
    return event_body(
        event_id,
        "customer.subscription.updated",
        data={"object": {"id": "sub_1", "plan": plan, "version": version}},
    )


# A handler for subscription snapshots, behind a version guard.
on_subscription = handler(
    "inbound",
    "customer.subscription.updated",
    entity="data.object.id",
    version="data.object.version",
)


def applied(redis: Redis) -> list[str]:
    return [x.decode() for x in redis.lrange("applied", 0, -1)]


@pytest.fixture
def harness(make_harness: Make) -> Harness:
    """A harness whose handler applies subscription snapshots behind a version guard."""
    harness = make_harness()
    url = harness.settings.redis_url

    @on_subscription
    def apply(event: Event) -> None:
        Redis.from_url(url).rpush("applied", event.payload["data"]["object"]["plan"])

    return harness


def test_reordered_and_repeated_deliveries_apply_only_newer_versions(
    harness: Harness, redis: Redis
) -> None:
    for event_id, version, plan in [
        ("e3", 3, "pro"),
        ("e1", 1, "free"),
        ("e2", 2, "basic"),
        ("e3-again", 3, "pro-again"),
    ]:
        harness.send(subscription(event_id, version, plan))
        harness.drain()  # one at a time, in this (wrong) order
    assert applied(redis) == ["pro"]
    states = {
        e: Job.fetch(job_id_for("inbound", e), connection=redis).meta["state"]
        for e in ("e3", "e1", "e2", "e3-again")
    }
    assert states == {"e3": "done", "e1": "stale", "e2": "stale", "e3-again": "stale"}
    assert redis.hget("webhook:stats:inbound", "stale") == b"3"
    assert redis.hget("webhook:event:inbound:e1", "status") == b"stale"


def test_a_newer_version_after_an_older_one_is_applied(harness: Harness, redis: Redis) -> None:
    harness.send(subscription("e1", "2026-01-01T00:00:00+00:00", "old"))
    harness.send(subscription("e2", "2026-06-01T00:00:00+00:00", "new"))
    harness.drain()
    assert applied(redis) == ["old", "new"]


def test_an_event_without_the_declared_version_is_dead_lettered_with_the_reason(
    harness: Harness, redis: Redis
) -> None:
    harness.event("e9", "customer.subscription.updated")
    harness.drain()
    job = Job.fetch(job_id_for("inbound", "e9"), connection=redis)
    assert job.meta["state"] == "dead"
    assert "'data.object.id' is not in the event" in job.meta["last_error"]


def test_a_retry_of_the_event_holding_the_version_still_applies(
    make_harness: Make, redis: Redis
) -> None:
    harness = make_harness()
    url = harness.settings.redis_url

    @on_subscription
    def fails_once(event: Event) -> None:
        r = Redis.from_url(url)
        if r.incr("tries") == 1:
            raise RuntimeError("first attempt fails")
        r.rpush("applied", "ok")

    harness.send(subscription("e5", 5, "x"))
    harness.drain()
    assert applied(redis) == ["ok"]


def test_newer_version_can_be_called_inside_a_handler(make_harness: Make, redis: Redis) -> None:
    harness = make_harness()
    url = harness.settings.redis_url

    @handler("inbound", "order.updated")
    def custom(event: Event) -> None:
        def key(e: Event) -> str:
            return f"{e.payload['shop']}/{e.payload['order']}"

        if newer_version(event, entity=key, version="updated_at"):
            Redis.from_url(url).rpush("applied", json.dumps(event.payload["updated_at"]))

    for n, stamp in enumerate([20, 10, 30]):
        harness.event(f"o{n}", "order.updated", shop="s", order=1, updated_at=stamp)
        harness.drain()
    assert [json.loads(x) for x in applied(redis)] == [20, 30]


def test_newer_version_outside_a_job_is_an_error() -> None:
    from datetime import UTC, datetime

    event = Event("s", "e", "t", {"id": 1, "v": 1}, b"", {}, datetime.now(UTC), 1)
    with pytest.raises(RuntimeError, match="inside a handler"):
        newer_version(event, "id", "v")


def test_a_guard_needs_both_entity_and_version() -> None:
    with pytest.raises(ValueError, match="both entity= and version="):
        HandlerRegistry().handler("s", "t", entity="data.object.id")
