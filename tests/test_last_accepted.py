"""Each source's last acceptance outlives a restart (app/last_accepted.py): the silence
alert must not go blind to a source that fell silent across a deploy."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from redis import Redis

import app.timeline
from app.last_accepted import KEEP_LATEST
from app.receiver_counts import ReceiverCounts
from app.timeline import flush, note_fresh
from tests.conftest import Harness
from tests.conftest import metric_value as value
from tests.test_timeline import run

KEY = "webhook:last-accepted"
GAUGE = "webhooks_last_accepted_timestamp_seconds"


@pytest.fixture(autouse=True)
def quiet_flusher(monkeypatch: pytest.MonkeyPatch) -> None:
    """The receiver's own flusher waits an hour: each test flushes when it means to."""
    monkeypatch.setattr(app.timeline, "FLUSH_EVERY", 3600.0)


def test_the_flush_keeps_when_a_source_last_had_an_event_accepted(
    make_harness: Callable[..., Harness], redis: Redis
) -> None:
    harness = make_harness()
    counts = ReceiverCounts(frozenset(["inbound"]))
    run(harness.settings.redis_url, lambda c: note_fresh(c, "webhook", counts))
    assert harness.event("evt_1").status_code == 200
    assert redis.hget(KEY, "inbound") is None  # not on the request path
    run(harness.settings.redis_url, lambda c: flush(c, "webhook", counts))
    served = value(harness.client.get("/metrics").text, GAUGE, source="inbound")
    assert float(redis.hget(KEY, "inbound") or 0) == served > 0


def test_a_refused_request_writes_no_acceptance(
    make_harness: Callable[..., Harness], redis: Redis
) -> None:
    harness = make_harness()
    counts = ReceiverCounts(frozenset(["inbound"]))
    run(harness.settings.redis_url, lambda c: note_fresh(c, "webhook", counts))
    assert harness.send(b'{"id": "x"}', secret="wrong").status_code == 401
    run(harness.settings.redis_url, lambda c: flush(c, "webhook", counts))
    assert redis.hget(KEY, "inbound") is None


def test_a_starting_receiver_serves_the_kept_time(
    make_client: Callable[..., TestClient], redis: Redis
) -> None:
    kept = time.time() + 3600  # later than anything this test process's gauge holds
    redis.hset(KEY, "inbound", repr(kept))
    text = make_client().get("/metrics").text
    assert value(text, GAUGE, source="inbound") == kept


def test_only_a_later_time_replaces_the_kept_one(redis: Redis) -> None:
    redis.eval(KEEP_LATEST, 1, KEY, "inbound", "200.5", "stripe", "100")
    redis.eval(KEEP_LATEST, 1, KEY, "inbound", "150", "stripe", "300")
    assert redis.hgetall(KEY) == {b"inbound": b"200.5", b"stripe": b"300"}
