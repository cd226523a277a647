"""Traces from the real processes: the Procfile's web and worker export to a collector on
loopback (`tests/otel_collector.py`), and each delivery reads as one trace, receiver ->
attempt -> handler, in both worker modes."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from redis import Redis

from app.keys import job_id_for
from tests.conftest import SECRET, event_body, sign
from tests.otel_collector import Collector, Span, serve
from tests.processes import ROOT, Stack, effects, wait_until
from workers.dev.redis_server import RedisServer, free_port

pytestmark = pytest.mark.e2e

DELIVERY = "POST /webhooks/{source}"
# In the payload of every event sent here: no exported span may carry it.
MARKER = "payload-marker-7f3a"
SENDER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
SENDER_PARENT = f"00-{SENDER_TRACE}-00f067aa0ba902b7-01"


@pytest.fixture
def collector() -> Iterator[Collector]:
    yield from serve()


def post(web_url: str, event_id: str, event_type: str = "order.created") -> httpx.Response:
    body = event_body(event_id, event_type, note=MARKER)
    headers = {"X-Signature-256": sign(body), "traceparent": SENDER_PARENT}
    return httpx.post(f"{web_url}/webhooks/inbound", content=body, headers=headers, timeout=10)


def delivery(collector: Collector, event_id: str, outcome: str = "accepted") -> Span:
    spans = collector.wait_for(
        lambda spans: any(
            s.name == DELIVERY
            and s.attr("webhook.event_id") == event_id
            and s.attr("webhook.outcome") == outcome
            for s in spans
        ),
        f"the {outcome} delivery span of {event_id}",
    )
    return next(
        s
        for s in spans
        if s.name == DELIVERY
        and s.attr("webhook.event_id") == event_id
        and s.attr("webhook.outcome") == outcome
    )


def attempts(collector: Collector, event_id: str, count: int) -> list[Span]:
    def found(spans: list[Span]) -> list[Span]:
        return sorted(
            (
                s
                for s in spans
                if s.name == "webhook attempt" and s.attr("webhook.event_id") == event_id
            ),
            key=lambda s: s.attr("webhook.attempt"),
        )

    collector.wait_for(lambda spans: len(found(spans)) >= count, f"{count} attempts of {event_id}")
    return found(collector.all())


def children(collector: Collector, span: Span) -> list[Span]:
    return [s for s in collector.trace(span.trace_id) if s.parent_id == span.span_id]


def handler_of(collector: Collector, attempt: Span) -> Span:
    collector.wait_for(
        lambda spans: any(s.parent_id == attempt.span_id for s in spans), "the handler's span"
    )
    (found,) = [s for s in children(collector, attempt) if s.name.startswith("handler ")]
    return found


def batch_of(collector: Collector, attempt: Span) -> Span:
    (linked,) = [(t, s) for t, s, a in attempt.links if a.get("webhook.link") == "batch"]
    spans = collector.wait_for(
        lambda spans: any((s.trace_id, s.span_id) == linked for s in spans), "the batch's span"
    )
    return next(s for s in spans if (s.trace_id, s.span_id) == linked)


def cli(stack: Stack, *args: str) -> str:
    """The `webhooks` command, as an operator runs it against the stack's Redis."""
    ran = subprocess.run(
        [str(Path(sys.executable).parent / "webhooks"), *args],
        env={**stack.env, "PATH": "/usr/bin:/bin"},
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    return ran.stdout


@pytest.fixture
def traced_stack(
    redis_server: RedisServer, make_stack: Callable[..., Stack], collector: Collector
) -> Callable[[str], Stack]:
    def make(mode: str) -> Stack:
        return make_stack(
            redis_server.url,
            WEBHOOK_MAX_RETRIES="1",
            WEBHOOK_WORKER_MODE=mode,
            WEBHOOK_KEY_PREFIX=f"traced-{mode}",
            WEBHOOK_QUEUE=f"traced-{mode}",
            OTEL_TRACES_EXPORTER="otlp",
            OTEL_EXPORTER_OTLP_ENDPOINT=collector.endpoint,
            OTEL_BSP_SCHEDULE_DELAY="100",
        )

    return make


@pytest.mark.parametrize("mode", ["fork", "simple"])
def test_a_delivery_its_retries_its_dead_letter_and_its_requeue_read_as_traces(
    traced_stack: Callable[[str], Stack], collector: Collector, redis: Redis, mode: str
) -> None:
    stack = traced_stack(mode)
    web = stack.start("web")
    stack.start("worker")
    ok, retried, dead = f"evt_ok_{mode}", f"evt_retry_{mode}", f"evt_dead_{mode}"
    redis.set(f"fail:{dead}", 1)
    for event_id, event_type in [(ok, "order.created"), (retried, "order.fails_once")]:
        assert post(web.url, event_id, event_type).status_code == 200
    assert post(web.url, dead, "order.flaky").status_code == 200

    # A success: the receiver's span starts the trace (the sender's traceparent is a link,
    # never the parent), verification and claim are its children, the attempt its child
    # in the worker, the handler the attempt's child; the batch's span is linked.
    received = delivery(collector, ok)
    assert received.service == "webhook-receiver" and received.parent_id == ""
    assert received.trace_id != SENDER_TRACE
    assert [(t, a) for t, _, a in received.links] == [(SENDER_TRACE, {"webhook.link": "sender"})]
    assert received.attr("webhook.source") == "inbound"
    assert received.attr("webhook.provider") == "hmac"
    assert received.attr("webhook.event_type") == "order.created"
    assert received.attr("http.response.status_code") == 200
    steps = {s.name: s for s in children(collector, received)}
    assert {"webhook verify", "webhook claim"} <= set(steps)
    # The claim's Redis round trip, by opentelemetry-instrumentation-redis.
    assert {s.attr("db.system") for s in children(collector, steps["webhook claim"])} == {"redis"}
    (attempt,) = attempts(collector, ok, 1)
    assert attempt.service == "webhook-worker"
    assert (attempt.trace_id, attempt.parent_id) == (received.trace_id, received.span_id)
    assert attempt.attr("webhook.attempt") == 1 and attempt.attr("webhook.outcome") == "done"
    handler = handler_of(collector, attempt)
    assert handler.name == "handler tests.e2e_handlers.count"
    assert handler.attr("webhook.handler_state") == "done"
    # The command shows the delivery's trace id, to look it up in the tracing backend.
    shown = json.loads(cli(stack, "events", "show", "inbound", ok, "--json"))
    assert shown["trace_id"] == received.trace_id
    batch = batch_of(collector, attempt)
    assert batch.trace_id != received.trace_id
    collector.wait_for(
        lambda _: (
            {"webhook take", "webhook begin", "webhook settle"}
            <= {s.name for s in children(collector, batch)}
        ),
        "the batch's take, begin and settle",
    )

    # A retry, then a success: two attempts in the delivery's trace, the second with the
    # backoff it waited.
    first, second = attempts(collector, retried, 2)
    assert first.attr("webhook.outcome") == "retry" and first.attr("webhook.retry_in_s") == 1
    assert first.status == 2 and "downstream is down" in first.status_message
    assert handler_of(collector, first).status == 2
    received = delivery(collector, retried)
    assert {first.trace_id, second.trace_id} == {received.trace_id}
    assert first.parent_id == second.parent_id == received.span_id
    assert second.attr("webhook.attempt") == 2 and second.attr("webhook.outcome") == "done"
    # RQ schedules in whole seconds: a 1 s interval waits between 0 and 2 s.
    assert 0 < second.attr("webhook.backoff_s") < 30

    # A dead letter: the last attempt says so.
    first, last = attempts(collector, dead, 2)
    assert last.attr("webhook.outcome") == "dead_letter" and last.status == 2
    received = delivery(collector, dead)

    # Its requeue (the cause fixed) starts a trace of its own, linked to the delivery's.
    redis.delete(f"fail:{dead}")
    job_id = job_id_for("inbound", dead)
    cli(stack, "dead", "requeue", job_id)
    *_, third = attempts(collector, dead, 3)
    assert third.attr("webhook.outcome") == "done" and third.attr("webhook.requeues") == 1
    (again,) = [s for s in collector.trace(third.trace_id) if s.span_id == third.parent_id]
    assert again.name == "webhook requeue" and again.parent_id == ""
    assert third.trace_id != received.trace_id
    assert again.links == [(received.trace_id, received.span_id, {"webhook.link": "original"})]

    # A duplicate: a short trace, the receiver's spans only.
    assert post(web.url, ok).json()["status"] == "duplicate"
    duplicate = delivery(collector, ok, "duplicate")
    assert effects(redis, ok) == 1
    assert {s.service for s in collector.trace(duplicate.trace_id)} == {"webhook-receiver"}

    # A replay from the ledger starts a trace of its own too, linked to the delivery's.
    first = delivery(collector, ok)
    cli(stack, "replay", "ledger", "inbound", "--since", "0", "--all-handlers")
    spans = collector.wait_for(
        lambda spans: any(
            s.name == "webhook replay" and s.attr("webhook.event_id") == ok for s in spans
        ),
        "the replay's span",
    )
    (replay,) = [
        s for s in spans if s.name == "webhook replay" and s.attr("webhook.event_id") == ok
    ]
    assert replay.parent_id == "" and replay.trace_id != first.trace_id
    assert replay.links == [(first.trace_id, first.span_id, {"webhook.link": "original"})]
    *_, again = attempts(collector, ok, 2)
    assert (again.trace_id, again.parent_id) == (replay.trace_id, replay.span_id)

    # Span names stay short and few (a pipeline's is not the list of its commands).
    assert max(len(s.name) for s in collector.all()) <= 64
    # Nothing exported carries the secret, a signature, or the payload.
    signature = sign(event_body(ok, "order.created", note=MARKER)).encode()
    exported = b"".join(collector.bodies)
    for leak in (SECRET.encode(), signature, signature.split(b"=", 1)[-1], MARKER.encode()):
        assert leak not in exported


def test_each_refusal_is_traced_with_its_status_and_reason(
    traced_stack: Callable[[str], Stack], collector: Collector
) -> None:
    web = traced_stack("fork").start("web")
    body = event_body("evt_refused", note=MARKER)
    url = f"{web.url}/webhooks/inbound"
    refusals = {
        401: httpx.post(url, content=body, headers={"X-Signature-256": "sha256=" + "0" * 64}),
        404: httpx.post(f"{web.url}/webhooks/nowhere", content=body),
        400: httpx.post(url, content=b"not json", headers={"X-Signature-256": sign(b"not json")}),
        413: httpx.post(url, content=b"x" * 2_000_000),
    }
    assert {status: answer.status_code for status, answer in refusals.items()} == {
        status: status for status in refusals
    }
    spans = collector.wait_for(
        lambda spans: len([s for s in spans if s.attr("webhook.outcome") == "rejected"]) >= 4,
        "four refusals",
    )
    refused = {
        s.attr("http.response.status_code"): s.attr("webhook.reason")
        for s in spans
        if s.name == DELIVERY
    }
    assert refused == {
        401: "invalid_signature",
        404: "unknown_source",
        400: "invalid_payload",
        413: "body_too_large",
    }
    failed = {s.status_message for s in spans if s.name == "webhook verify" and s.status == 2}
    assert failed == {"invalid_signature", "invalid_payload"}


def test_the_other_routes_are_traced_by_the_fastapi_instrumentation_and_a_handshake_is_not(
    traced_stack: Callable[[str], Stack], collector: Collector
) -> None:
    web = traced_stack("fork").start("web")
    handshake = httpx.get(f"{web.url}/webhooks/inbound", headers={"traceparent": SENDER_PARENT})
    assert handshake.status_code == 405
    assert httpx.get(f"{web.url}/readyz").status_code == 200
    spans = collector.wait_for(
        lambda spans: any(s.name == "GET /readyz" for s in spans), "the probe's span"
    )
    (probe,) = [s for s in spans if s.name == "GET /readyz"]
    assert probe.service == "webhook-receiver"
    assert not [s for s in spans if s.trace_id == SENDER_TRACE or "webhooks" in s.name]


@pytest.mark.parametrize(
    "sent",
    [
        "not-a-traceparent",
        "00-" + "0" * 32 + "-00f067aa0ba902b7-01",  # an all-zero trace id: invalid
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" + "-x" * 2000,
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  # a forbidden version
    ],
    ids=["garbage", "zero-trace", "oversized", "version-ff"],
)
def test_a_hostile_traceparent_is_neither_parent_nor_link_and_fails_no_delivery(
    traced_stack: Callable[[str], Stack], collector: Collector, sent: str
) -> None:
    web = traced_stack("fork").start("web")
    event_id = f"evt_hostile_parent_{len(sent)}_{sent[:2]}"
    body = event_body(event_id, note=MARKER)
    headers = {"X-Signature-256": sign(body), "traceparent": sent}
    answer = httpx.post(f"{web.url}/webhooks/inbound", content=body, headers=headers)
    assert answer.json()["status"] == "accepted"
    received = delivery(collector, event_id)
    assert received.parent_id == "" and received.links == []


def test_a_delivery_redis_cannot_take_is_traced_as_a_503(
    make_redis: Callable[..., RedisServer],
    make_stack: Callable[..., Stack],
    collector: Collector,
) -> None:
    own = make_redis()
    stack = make_stack(
        own.url,
        OTEL_TRACES_EXPORTER="otlp",
        OTEL_EXPORTER_OTLP_ENDPOINT=collector.endpoint,
        OTEL_BSP_SCHEDULE_DELAY="100",
    )
    web = stack.start("web")
    own.kill()
    assert post(web.url, "evt_no_redis").status_code == 503
    spans = collector.wait_for(
        lambda spans: any(s.attr("http.response.status_code") == 503 for s in spans), "the 503"
    )
    (refused,) = [s for s in spans if s.attr("http.response.status_code") == 503]
    assert refused.attr("webhook.outcome") == "rejected"
    assert refused.attr("webhook.reason") == "queue_unavailable" and refused.status == 2
    (claim,) = [s for s in children(collector, refused) if s.name == "webhook claim"]
    assert claim.status == 2


def test_a_delivery_the_receiver_does_not_sample_is_not_traced_by_the_worker(
    traced_stack: Callable[[str], Stack], collector: Collector, redis: Redis
) -> None:
    stack = traced_stack("fork")
    web = stack.start("web", OTEL_TRACES_SAMPLER="always_off")
    stack.start("worker")  # the default sampler: parent-based
    assert post(web.url, "evt_unsampled").status_code == 200
    wait_until(lambda: effects(redis, "evt_unsampled") == 1, 30, "the event handled")
    # The batch's span (a root of the worker's own) is exported: its settle is the last.
    collector.wait_for(
        lambda spans: any(s.name == "webhook settle" for s in spans), "the batch's settle"
    )
    assert not [s for s in collector.all() if s.service == "webhook-receiver"]
    assert not [s for s in collector.all() if s.attr("webhook.event_id") == "evt_unsampled"]


def test_an_unreachable_collector_fails_no_delivery(
    redis_server: RedisServer, redis: Redis, make_stack: Callable[..., Stack]
) -> None:
    stack = make_stack(
        redis_server.url,
        WEBHOOK_KEY_PREFIX="traced-nowhere",
        WEBHOOK_QUEUE="traced-nowhere",
        OTEL_TRACES_EXPORTER="otlp",
        OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{free_port()}",
        OTEL_BSP_SCHEDULE_DELAY="100",
    )
    web = stack.start("web")
    worker = stack.start("worker")
    for n in range(5):
        assert post(web.url, f"evt_nowhere_{n}").status_code == 200
    wait_until(
        lambda: all(effects(redis, f"evt_nowhere_{n}") == 1 for n in range(5)),
        30,
        "every event handled",
    )
    assert worker.popen.poll() is None and web.popen.poll() is None


def test_the_console_exporter_prints_the_spans(
    redis_server: RedisServer, redis: Redis, make_stack: Callable[..., Stack]
) -> None:
    stack = make_stack(
        redis_server.url,
        WEBHOOK_KEY_PREFIX="traced-console",
        WEBHOOK_QUEUE="traced-console",
        OTEL_TRACES_EXPORTER="console",
        OTEL_BSP_SCHEDULE_DELAY="100",
    )
    web = stack.start("web")
    worker = stack.start("worker")
    assert post(web.url, "evt_console").status_code == 200
    wait_until(lambda: '"name": "webhook attempt"' in worker.output(), 30, "the attempt's span")
    wait_until(lambda: f'"name": "{DELIVERY}"' in web.output(), 30, "the delivery's span")
    assert MARKER not in web.output() + worker.output()
