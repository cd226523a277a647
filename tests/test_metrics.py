"""GET /metrics: the receiver's figures, and the pipeline's read from Redis."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from redis import Redis

from tests.conftest import Harness, event_body, sign
from tests.conftest import metric_value as value
from tests.processes import Stack
from workers import Event, handler
from workers.dev.redis_server import RedisServer


def test_metrics_count_answers_and_read_the_pipeline_from_redis(
    make_harness: Callable[..., Harness],
) -> None:
    harness = make_harness(webhook_retry_intervals="600", webhook_max_retries=1)
    client = harness.client

    @handler("inbound", "bad")
    def bad(event: Event) -> None:
        raise RuntimeError("no")

    @handler("inbound", "worse")
    def worse(event: Event) -> None:
        from workers import PermanentError

        raise PermanentError("never")

    # The receiver's counters are per process and shared by every app a test builds.
    counted = [
        ("webhooks_received_total", {"source": "inbound", "outcome": "accepted"}),
        ("webhooks_received_total", {"source": "inbound", "outcome": "duplicate"}),
        ("webhooks_rejected_total", {"source": "inbound", "reason": "invalid_signature"}),
        ("webhooks_rejected_total", {"source": "(unknown)", "reason": "unknown_source"}),
        ("webhooks_ack_seconds_count", {"source": "inbound"}),
    ]
    first = client.get("/metrics").text
    before = [value(first, name, **labels) for name, labels in counted]
    for event_id, kind in [("a", "good"), ("b", "bad"), ("c", "worse"), ("d", "good")]:
        harness.event(event_id, kind)
    harness.event("a", "good")  # duplicate
    harness.send(event_body("x"), secret="wrong")  # rejected
    client.post("/webhooks/nosuch", content=b"{}")  # unknown source
    harness.drain()
    harness.event("q", "good")  # stays queued
    text = client.get("/metrics").text

    after = [value(text, name, **labels) for name, labels in counted]
    # 5 accepted, 1 duplicate, 1 bad signature, 1 unknown source; 6 acknowledgements.
    assert [a - b for a, b in zip(after, before, strict=True)] == [5, 1, 1, 1, 6]
    assert (
        time.time() - value(text, "webhooks_last_accepted_timestamp_seconds", source="inbound") < 60
    )
    assert value(text, "webhooks_queue_depth") == 1
    assert value(text, "webhooks_scheduled_retries") == 1  # "b" waits 600 s
    assert value(text, "webhooks_dead_letters") == 1  # "c"
    assert 0 <= value(text, "webhooks_oldest_queued_age_seconds") < 60
    outcomes = {
        o: value(text, "webhooks_worker_outcomes_total", source="inbound", outcome=o)
        for o in ("done", "ignored", "retried", "dead_lettered")
    }
    assert outcomes == {"done": 0, "ignored": 2, "retried": 1, "dead_lettered": 1}
    by_type = {
        (t, o): value(
            text, "webhooks_worker_type_outcomes_total", source="inbound", type=t, outcome=o
        )
        for t, o in [("good", "ignored"), ("bad", "retried"), ("worse", "dead_lettered")]
    }
    assert by_type == {("good", "ignored"): 2, ("bad", "retried"): 1, ("worse", "dead_lettered"): 1}
    # A type's other outcomes are there at 0: increase() sees the first dead letter.
    zero = (
        'webhooks_worker_type_outcomes_total{outcome="dead_lettered",source="inbound",type="good"}'
    )
    assert f"{zero} 0.0" in text


def test_metrics_serve_the_receivers_own_figures_when_redis_is_unreachable(
    make_client: Callable[..., TestClient],
) -> None:
    """A scrape that failed would hide the 503s an outage gives providers."""
    client = make_client(redis_url="redis://127.0.0.1:1/0")
    body = event_body("down")
    sent = client.post("/webhooks/inbound", content=body, headers={"X-Signature-256": sign(body)})
    assert sent.status_code == 503
    response = client.get("/metrics")
    assert response.status_code == 200
    text = response.text
    assert value(text, "webhooks_redis_up") == 0
    assert value(text, "webhooks_rejected_total", source="inbound", reason="queue_unavailable") >= 1
    assert "webhooks_queue_depth" not in text  # not a 0 that says all is well


def test_metrics_say_redis_is_up_when_the_pipeline_was_read(
    make_client: Callable[..., TestClient], redis: Redis
) -> None:
    redis.rpush("rq:queue:webhooks", "j1")
    text = make_client().get("/metrics").text
    assert value(text, "webhooks_redis_up") == 1
    assert value(text, "webhooks_queue_depth") == 1


def test_metrics_add_up_across_uvicorn_worker_processes(
    redis_server: RedisServer, redis: Redis, tmp_path: Path, make_stack: Callable[..., Stack]
) -> None:
    metrics_dir = tmp_path / "prometheus"
    metrics_dir.mkdir()
    # The Procfile's web line with two worker processes behind one port.
    web = make_stack(redis_server.url).start(
        "web", extra_args="--workers 2", PROMETHEUS_MULTIPROC_DIR=str(metrics_dir)
    )

    def deliver(n: int) -> int:
        with httpx.Client() as http:  # a connection each: the processes share the load
            body = event_body(f"m{n}")
            return http.post(
                f"{web.url}/webhooks/inbound", content=body, headers={"X-Signature-256": sign(body)}
            ).status_code

    with ThreadPoolExecutor(max_workers=16) as pool:
        assert set(pool.map(deliver, range(300))) == {200}
    text = httpx.get(f"{web.url}/metrics").text
    assert value(text, "webhooks_received_total", source="inbound", outcome="accepted") == 300
    # Each process counted in its own file; /metrics added them up.
    assert len(list(metrics_dir.glob("counter_*.db"))) == 2


def test_a_delivery_that_raised_something_unexpected_is_counted_as_an_internal_error(
    make_client: Callable[..., TestClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server answers it 500; the 5xx alert must see it as it sees a refusal."""
    from app.receiver import Receiver

    async def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug")

    client = make_client()
    labels = {"source": "inbound", "reason": "internal_error"}
    before = value(client.get("/metrics").text, "webhooks_rejected_total", **labels)
    monkeypatch.setattr(Receiver, "receive", broken)
    with pytest.raises(RuntimeError, match="a bug"):
        client.post("/webhooks/inbound", content=b"{}")
    after = value(client.get("/metrics").text, "webhooks_rejected_total", **labels)
    assert after - before == 1
