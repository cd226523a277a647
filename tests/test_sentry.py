"""Handler errors in Sentry, from the real worker process in both modes, to an ingest
endpoint on loopback (`tests/sentry_ingest.py`): one event per failed attempt or per final
failure, their tags, and nothing of the secret, the signature or the payload."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from redis import Redis

from tests.conftest import SECRET, event_body, sign
from tests.processes import Stack, effects, wait_until
from tests.sentry_ingest import KEY, PROJECT, Ingest, serve
from workers.dev.redis_server import RedisServer, free_port

pytestmark = pytest.mark.e2e

# In the payload of every event sent here, and in the hostile handler's error message.
MARKER = "payload-marker-5c1e"
FLAKY = "tests.e2e_handlers.flaky"
HOSTILE = "tests.e2e_handlers.hostile"


@pytest.fixture
def ingest() -> Iterator[Ingest]:
    yield from serve()


@pytest.fixture
def sentry_stack(
    redis_server: RedisServer, make_stack: Callable[..., Stack], ingest: Ingest
) -> Callable[..., Stack]:
    def make(mode: str, events: str, retries: int, **env: str) -> Stack:
        name = f"sentry-{mode}-{events}"
        stack = make_stack(
            redis_server.url,
            SENTRY_DSN=ingest.dsn(),
            SENTRY_ENVIRONMENT="e2e",
            WEBHOOK_SENTRY_EVENTS=events,
            WEBHOOK_MAX_RETRIES=str(retries),
            WEBHOOK_WORKER_MODE=mode,
            WEBHOOK_KEY_PREFIX=name,
            WEBHOOK_QUEUE=name,
            **env,
        )
        stack.start("web")
        stack.start("worker")
        return stack

    return make


def post(stack: Stack, event_id: str, event_type: str, **fields: Any) -> bytes:
    body = event_body(event_id, event_type, **(fields or {"note": MARKER}))
    answer = httpx.post(
        f"{stack.processes[0].url}/webhooks/inbound",
        content=body,
        headers={"X-Signature-256": sign(body)},
        timeout=10,
    )
    assert answer.json()["status"] == "accepted", answer.text
    return body


def tags(event: dict[str, Any]) -> dict[str, str]:
    return {k: v for k, v in event["tags"].items() if k.startswith("webhook.")}


def exception(event: dict[str, Any]) -> dict[str, Any]:
    (only,) = event["exception"]["values"]
    return dict(only)


def wait_dead(ingest: Ingest, *event_ids: str) -> None:
    """Until the event of each one's last attempt (the one after which it is dead-lettered)
    has arrived: with the worker stopped next, the events that came are all that come."""

    def dead(event_id: str) -> bool:
        return any(e["tags"]["webhook.outcome"] == "dead_letter" for e in ingest.of(event_id))

    wait_until(lambda: all(dead(e) for e in event_ids), 30, f"the last attempts of {event_ids}")


def stop_worker(stack: Stack) -> None:
    """Stop the stack: the worker (and its child) send what they still hold on the way out,
    so that what has arrived once it is down is all there will be."""
    for process in stack.processes:
        code = process.stop()
        if process.name == "worker":
            assert code == 0, process.output()


def assert_nothing_secret(ingest: Ingest, event_ids: list[str], payload: bool = False) -> None:
    received = ingest.received()
    assert received, "nothing was received"
    for event_id, event_type in event_ids:
        signature = sign(event_body(event_id, event_type, note=MARKER)).encode()
        assert signature not in received
    assert SECRET.encode() not in received
    assert (MARKER.encode() in received) is payload


@pytest.mark.parametrize("mode", ["fork", "simple"])
def test_each_failed_attempt_is_one_event_tagged_with_its_attempt(
    sentry_stack: Callable[..., Stack], ingest: Ingest, redis: Redis, mode: str
) -> None:
    stack = sentry_stack(mode, "attempt", retries=2)
    flaky, hostile = f"evt_flaky_{mode}", f"evt_hostile_{mode}"
    redis.set(f"fail:{flaky}", 1)
    post(stack, flaky, "order.flaky")
    post(stack, hostile, "order.hostile")
    wait_dead(ingest, flaky, hostile)
    stop_worker(stack)

    events = ingest.of(flaky)
    assert len(events) == 3 and len(ingest.all()) == 6  # nothing reported twice
    assert [tags(e) for e in events] == [
        {
            "webhook.source": "inbound",
            "webhook.event_type": "order.flaky",
            "webhook.event_id": flaky,
            "webhook.handler": FLAKY,
            "webhook.attempt": str(attempt),
            "webhook.worker_mode": mode,
            "webhook.outcome": outcome,
        }
        for attempt, outcome in [(1, "retry"), (2, "retry"), (3, "dead_letter")]
    ]
    first = events[0]
    assert first["level"] == "error" and first["environment"] == "e2e"
    assert first["transaction"] == FLAKY
    assert first["fingerprint"] == ["webhook-handler", FLAKY, "builtins.RuntimeError"]
    raised = exception(first)
    assert (raised["type"], raised["value"]) == ("RuntimeError", "downstream is down")
    assert raised["mechanism"] == {"type": "webhook_handler", "handled": False}
    frames = raised["stacktrace"]["frames"]
    # The handler's frame last, the app's; the worker's around it not.
    assert (frames[-1]["module"], frames[-1]["function"]) == ("tests.e2e_handlers", "flaky")
    assert frames[-1]["in_app"] is True
    assert [f["in_app"] for f in frames if f["module"].startswith("workers.")] == [False] * (
        len(frames) - 1
    )
    assert not [f for f in frames if "vars" in f]
    assert not {"request", "user", "breadcrumbs", "extra"} & set(first)

    # A handler that writes payload text into its error: the text is blanked.
    events = ingest.of(hostile)
    assert [tags(e)["webhook.handler"] for e in events] == [HOSTILE] * 3
    assert {exception(e)["value"] for e in events} == {"cannot parse [payload]"}
    assert_nothing_secret(ingest, [(flaky, "order.flaky"), (hostile, "order.hostile")])


@pytest.mark.parametrize("mode", ["fork", "simple"])
def test_a_final_failure_is_one_event_and_a_retried_success_none(
    sentry_stack: Callable[..., Stack], ingest: Ingest, redis: Redis, mode: str
) -> None:
    stack = sentry_stack(mode, "final", retries=1)
    dead, recovered = f"evt_dead_{mode}", f"evt_recovered_{mode}"
    redis.set(f"fail:{dead}", 1)
    redis.set(f"fail:{recovered}", 1)
    post(stack, recovered, "order.flaky")
    post(stack, dead, "order.flaky")
    wait_until(lambda: effects(redis, recovered) == 1, 30, "the first attempt's failure")
    redis.delete(f"fail:{recovered}")
    wait_until(lambda: effects(redis, recovered) == 2, 30, "the retry's success")
    wait_dead(ingest, dead)
    stop_worker(stack)

    assert effects(redis, dead) == 2
    (event,) = ingest.all()
    assert tags(event) == {
        "webhook.source": "inbound",
        "webhook.event_type": "order.flaky",
        "webhook.event_id": dead,
        "webhook.handler": FLAKY,
        "webhook.attempt": "2",
        "webhook.worker_mode": mode,
        "webhook.outcome": "dead_letter",
    }
    assert exception(event)["value"] == "downstream is down"
    assert_nothing_secret(ingest, [(dead, "order.flaky"), (recovered, "order.flaky")])


def test_the_payload_is_sent_only_when_asked_for_and_the_secret_never(
    sentry_stack: Callable[..., Stack], ingest: Ingest
) -> None:
    stack = sentry_stack("fork", "final", retries=0, WEBHOOK_SENTRY_SEND_PAYLOAD="true")
    post(stack, "evt_payload", "order.hostile")
    post(stack, "evt_leaky", "order.leaky")
    wait_dead(ingest, "evt_payload", "evt_leaky")
    stop_worker(stack)

    (leaky,) = ingest.of("evt_leaky")
    assert exception(leaky)["value"] == "refused with [redacted]"
    (event,) = ingest.of("evt_payload")
    assert exception(event)["value"] == f"cannot parse {MARKER}"
    assert event["extra"]["webhook.payload"]["note"] == MARKER
    # The handler's local variables, its event among them.
    (handler_frame,) = [f for f in exception(event)["stacktrace"]["frames"] if f["in_app"]]
    assert MARKER in handler_frame["vars"]["event"]
    assert_nothing_secret(
        ingest, [("evt_payload", "order.hostile"), ("evt_leaky", "order.leaky")], payload=True
    )
    assert ingest.paths == [f"/api/{PROJECT}/envelope/"] * len(ingest.paths)
    assert KEY  # the DSN's key is how Sentry authenticates: it is sent, by design


# Keys of the payload the echoing handler raises with (`ValueError(event.payload)`).
KEY_MARKERS = ("key-marker-7a4e@example.org", "nested-key-marker-7a4e", "deep-marker-7a4e")


def test_the_payloads_keys_are_blanked_like_its_values(
    sentry_stack: Callable[..., Stack], ingest: Ingest
) -> None:
    stack = sentry_stack("fork", "final", retries=0)
    first, nested, deep = KEY_MARKERS
    body = post(stack, "evt_keys", "order.echo", **{first: 1, "customer": {nested: [{deep: 2}]}})
    wait_dead(ingest, "evt_keys")
    stop_worker(stack)

    (event,) = ingest.of("evt_keys")
    assert tags(event)["webhook.handler"] == "tests.e2e_handlers.echo"
    shown = exception(event)["value"]
    assert shown.startswith("{'id': 'evt_keys', '[payload]': 'order.echo', '[payload]': 1")
    received = ingest.received()
    assert not [marker for marker in KEY_MARKERS if marker.encode() in received]
    assert b"7a4e" not in received and sign(body).encode() not in received


def test_an_unreachable_sentry_fails_no_delivery(
    redis_server: RedisServer, make_stack: Callable[..., Stack], redis: Redis
) -> None:
    stack = make_stack(
        redis_server.url,
        SENTRY_DSN=f"http://{KEY}@127.0.0.1:{free_port()}/{PROJECT}",
        WEBHOOK_SENTRY_EVENTS="attempt",
        WEBHOOK_MAX_RETRIES="0",
        WEBHOOK_KEY_PREFIX="sentry-nowhere",
        WEBHOOK_QUEUE="sentry-nowhere",
    )
    stack.start("web")
    worker = stack.start("worker")
    failing = [f"evt_nowhere_{n}" for n in range(3)]
    for event_id in failing:
        redis.set(f"fail:{event_id}", 1)
        post(stack, event_id, "order.flaky")
    post(stack, "evt_nowhere_ok", "order.created")
    wait_until(
        lambda: all(effects(redis, e) == 1 for e in [*failing, "evt_nowhere_ok"]),
        30,
        "every event handled",
    )
    assert worker.popen.poll() is None
    stop_worker(stack)  # and it stops as usual, with what it could not send
