"""The figures /metrics reads from Redis for the alert rules: live workers, the scheduler,
retries due, outcomes by event type (bounded), and each source's expected silence."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from redis import Redis

import app.type_stats
from app.keys import Keys
from app.type_stats import OTHER, count_command
from tests.conftest import metric_value as value

KEYS = Keys("webhook", "webhooks")


def test_a_worker_counts_while_its_key_lives_without_a_death(
    make_client: Callable[..., TestClient], redis: Redis
) -> None:
    redis.sadd(KEYS.workers, "rq:worker:alive", "rq:worker:stopped", "rq:worker:expired")
    redis.hset("rq:worker:alive", "state", "idle")
    redis.hset("rq:worker:stopped", mapping={"state": "idle", "death": "2026-01-01T00:00:00Z"})
    text = make_client().get("/metrics").text
    assert value(text, "webhooks_workers") == 1


def test_the_scheduler_is_up_while_its_lock_is_held(
    make_client: Callable[..., TestClient], redis: Redis
) -> None:
    client = make_client()
    assert value(client.get("/metrics").text, "webhooks_scheduler_up") == 0
    redis.set(KEYS.scheduler_lock, "worker-1", ex=61)
    assert value(client.get("/metrics").text, "webhooks_scheduler_up") == 1


def test_retries_due_are_the_scheduled_ones_whose_time_has_come(
    make_client: Callable[..., TestClient], redis: Redis
) -> None:
    now = time.time()
    redis.zadd(KEYS.scheduled, {"late": now - 30, "just-due": now - 0.5, "later": now + 600})
    text = make_client().get("/metrics").text
    assert (value(text, "webhooks_scheduled_retries"), value(text, "webhooks_retries_due")) == (
        3,
        2,
    )


def test_a_sources_types_past_the_cap_are_counted_as_other(
    redis: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app.type_stats, "TYPES_PER_SOURCE", 2)
    for kind in ["a", "b", "c", "a", "d", ""]:
        redis.execute_command(*count_command(KEYS, "inbound", kind, "done"))
    counts = {k.decode(): int(v) for k, v in redis.hgetall(KEYS.type_stats("inbound")).items()}
    assert counts == {"done:a": 2, "done:b": 1, f"done:{OTHER}": 3}
    # Another source has its own allowance.
    redis.execute_command(*count_command(KEYS, "stripe", "c", "retried"))
    assert redis.hgetall(KEYS.type_stats("stripe")) == {b"retried:c": b"1"}


def test_a_type_once_counted_keeps_its_own_series_past_the_cap(
    redis: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app.type_stats, "TYPES_PER_SOURCE", 1)
    redis.execute_command(*count_command(KEYS, "inbound", "a", "retried"))
    redis.execute_command(*count_command(KEYS, "inbound", "b", "retried"))
    redis.execute_command(*count_command(KEYS, "inbound", "a", "dead_lettered"))
    counts = {k.decode(): int(v) for k, v in redis.hgetall(KEYS.type_stats("inbound")).items()}
    assert counts == {"retried:a": 1, f"retried:{OTHER}": 1, "dead_lettered:a": 1}


def test_each_sources_expected_silence_is_served(
    make_client: Callable[..., TestClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEBHOOK_SECRET_NIGHTLY", "nightly-secret-0123456789")
    monkeypatch.setenv("WEBHOOK_EXPECTED_SILENCE_NIGHTLY", "172800")
    client = make_client(webhook_sources="inbound,nightly:hmac", webhook_expected_silence=3600)
    text = client.get("/metrics").text
    silence = "webhooks_source_expected_silence_seconds"
    assert (value(text, silence, source="inbound"), value(text, silence, source="nightly")) == (
        3600,
        172800,
    )
