"""Every answer of `POST /webhooks/{source}`, against a real redis-server."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from redis import Redis
from rq import Queue
from rq.job import Job, validate_job_id

from app.keys import job_id_for
from tests.conftest import SECRET, event_body, sign

Post = Callable[..., Any]


@pytest.fixture
def client(make_client: Callable[..., TestClient], redis: Redis) -> TestClient:
    return make_client()


def queued_jobs(redis: Redis) -> list[Job]:
    return Queue("webhooks", connection=redis).get_jobs()


def test_a_signed_event_is_accepted_and_queued_once(
    client: TestClient, post_event: Post, redis: Redis
) -> None:
    response = post_event(client, event_body("evt_1"))
    assert (response.status_code, response.json()) == (200, {"status": "accepted", "id": "evt_1"})
    assert [job.id for job in queued_jobs(redis)] == [job_id_for("inbound", "evt_1")]


def test_a_repeated_event_is_a_duplicate_and_queues_nothing(
    client: TestClient, post_event: Post, redis: Redis
) -> None:
    post_event(client, event_body("evt_1"))
    response = post_event(client, event_body("evt_1"))
    assert (response.status_code, response.json()) == (200, {"status": "duplicate", "id": "evt_1"})
    assert len(queued_jobs(redis)) == 1


def test_the_dedupe_key_expires_after_the_source_ttl(
    make_client: Callable[..., TestClient], post_event: Post, redis: Redis
) -> None:
    post_event(make_client(webhook_dedupe_ttl=123), event_body("evt_1"))
    assert 0 < redis.ttl("webhook:seen:inbound:evt_1") <= 123


def test_an_event_whose_job_still_exists_is_a_duplicate_after_its_key_expired(
    client: TestClient, post_event: Post, redis: Redis
) -> None:
    post_event(client, event_body("evt_1"))
    redis.delete("webhook:seen:inbound:evt_1")
    assert post_event(client, event_body("evt_1")).json()["status"] == "duplicate"
    assert len(queued_jobs(redis)) == 1


def test_the_job_carries_the_verified_bytes_and_labels(
    client: TestClient, post_event: Post, redis: Redis
) -> None:
    raw = b'{"id": "evt_9",  "type": "order.created", "n": 1.50}'
    post_event(client, raw)
    [job] = queued_jobs(redis)
    source, event_id, event_type, payload, _headers, _received = job.args
    assert (source, event_id, event_type, payload) == ("inbound", "evt_9", "order.created", raw)
    assert job.func_name == "workers.job.deliver"
    assert job.meta["source"] == "inbound" and job.meta["event_id"] == "evt_9"
    assert job.meta["type"] == "order.created"
    assert job.retries_left == 2


def test_the_job_description_never_carries_markup_or_the_payload(
    client: TestClient, post_event: Post, redis: Redis
) -> None:
    raw = event_body(
        '"><img src=x onerror=alert(1)>',
        "<script>alert(1)</script>",
        secret_field="payload-only-text",
    )
    post_event(client, raw)
    [job] = queued_jobs(redis)
    assert not set("<>\"'") & set(job.description)
    assert "payload-only-text" not in job.description


@pytest.mark.parametrize("event_id", ["a.b", "x:y", "c/d", "ünï cødé", "evt 1", "-" * 200])
def test_any_provider_event_id_maps_to_a_valid_rq_job_id(
    client: TestClient, post_event: Post, redis: Redis, event_id: str
) -> None:
    assert post_event(client, event_body(event_id)).status_code == 200
    [job] = queued_jobs(redis)
    validate_job_id(job.id)  # RQ's own rule: letters, digits, `_` and `-`
    assert job.meta["event_id"] == event_id


def test_a_wrong_signature_is_401_and_queues_nothing(
    client: TestClient, post_event: Post, redis: Redis
) -> None:
    response = post_event(client, event_body(), secret="not-the-secret")
    assert response.status_code == 401
    assert response.json() == {"detail": "signature does not match"}
    assert queued_jobs(redis) == [] and redis.keys("webhook:*") == []


def test_a_missing_signature_is_401(client: TestClient) -> None:
    response = client.post("/webhooks/inbound", content=event_body())
    assert response.status_code == 401


def test_an_unknown_source_is_404(client: TestClient, post_event: Post) -> None:
    response = post_event(client, event_body(), source="nope")
    assert (response.status_code, response.json()) == (404, {"detail": "unknown source 'nope'"})


@pytest.mark.parametrize(
    ("raw", "detail"),
    [
        (b"{not json", "body is not valid JSON"),
        (b'{"type": "order.created"}', "no event id: body 'id' is missing or not a string"),
    ],
)
def test_unparseable_or_id_less_bodies_are_400(
    client: TestClient, post_event: Post, raw: bytes, detail: str
) -> None:
    response = post_event(client, raw)
    assert (response.status_code, response.json()) == (400, {"detail": detail})


@pytest.mark.parametrize(
    "raw",
    [
        b'{"id": "evt_nan", "type": "t", "created": NaN}',
        b'{"id": "evt_inf", "type": "t", "created": Infinity}',
        b'{"id": "evt_ninf", "type": "t", "amount": -Infinity}',
        b'{"id": "evt_big", "type": "t", "created": 1e400}',
        b'{"id": "evt_nbig", "type": "t", "amount": -1e400}',
    ],
)
def test_nan_infinity_and_numbers_that_overflow_a_float_are_not_json(
    client: TestClient, post_event: Post, redis: Redis, raw: bytes
) -> None:
    response = post_event(client, raw)
    assert (response.status_code, response.json()) == (400, {"detail": "body is not valid JSON"})
    assert queued_jobs(redis) == []


def test_a_stale_created_timestamp_is_400(client: TestClient, post_event: Post) -> None:
    response = post_event(client, event_body(created=1_000_000_000))
    assert (response.status_code, response.json()) == (
        400,
        {"detail": "timestamp outside the replay tolerance"},
    )


def test_a_body_over_the_limit_is_413(
    make_client: Callable[..., TestClient], post_event: Post, redis: Redis
) -> None:
    client = make_client(webhook_max_body_bytes=64)
    response = post_event(client, event_body(pad="x" * 100))
    assert response.status_code == 413
    assert queued_jobs(redis) == []


@pytest.mark.parametrize("length", ["abc", "-5", "1e3"])
def test_a_malformed_content_length_is_400_not_500(client: TestClient, length: str) -> None:
    response = client.post(
        "/webhooks/inbound",
        content=b"{}",
        headers={"Content-Length": length, "X-Signature-256": sign(b"{}")},
    )
    assert (response.status_code, response.json()) == (
        400,
        {"detail": "malformed Content-Length header"},
    )


def raw_post(client: TestClient, headers: list[tuple[bytes, bytes]], body: bytes) -> Any:
    """POST the exact header bytes to the app, as a server would hand them over (the test
    client re-encodes header values as UTF-8), on the client's event loop."""
    sent = asgi_post(client, headers, [{"type": "http.request", "body": body}])
    return sent[0]["status"], json.loads(b"".join(m.get("body", b"") for m in sent[1:]))


def asgi_post(
    client: TestClient, headers: list[tuple[bytes, bytes]], messages: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Call the app as a server would, with these request messages; returns what it sent."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/webhooks/inbound",
        "raw_path": b"/webhooks/inbound",
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 40000),
        "server": ("testserver", 80),
    }
    sent: list[dict[str, Any]] = []
    pending = list(messages)

    async def receive() -> dict[str, Any]:
        return pending.pop(0) if pending else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    assert client.portal is not None  # the client is entered (`make_client`)
    client.portal.call(client.app, scope, receive, send)
    return sent


def test_a_client_gone_mid_body_is_one_log_line_not_a_traceback(
    client: TestClient, redis: Redis, caplog: pytest.LogCaptureFixture
) -> None:
    body = event_body("evt_gone")
    messages = [
        {"type": "http.request", "body": body[:10], "more_body": True},
        {"type": "http.disconnect"},
    ]
    headers = [(b"x-signature-256", sign(body).encode())]
    assert asgi_post(client, headers, messages) == []  # nobody is left to answer
    assert [r.getMessage() for r in caplog.records] == ["client disconnected before its body ended"]
    assert queued_jobs(redis) == []


# '²', '¹' and '³' (bytes B2, B9 and B3, as Starlette decodes headers: Latin-1) are
# digits to str.isdigit, but not to int().
@pytest.mark.parametrize("length", [b"\xb2", b"1\xb9", b" \xb3 "])
def test_a_content_length_of_non_ascii_digits_is_400_not_500(
    client: TestClient, length: bytes
) -> None:
    headers = [(b"content-length", length), (b"x-signature-256", sign(b"{}").encode())]
    assert raw_post(client, headers, b"{}") == (
        400,
        {"detail": "malformed Content-Length header"},
    )


def test_a_content_length_of_more_digits_than_int_reads_is_413_not_500(
    client: TestClient,
) -> None:
    # int() refuses strings of over 4300 digits; any such length is over the limit.
    response = client.post(
        "/webhooks/inbound",
        content=b"{}",
        headers={"Content-Length": "9" * 5000, "X-Signature-256": sign(b"{}")},
    )
    assert response.status_code == 413, response.text


def test_redis_unreachable_is_503_and_readyz_says_so(
    make_client: Callable[..., TestClient], post_event: Post
) -> None:
    client = make_client(redis_url="redis://127.0.0.1:1/0")
    response = post_event(client, event_body())
    assert response.status_code == 503
    assert "nothing was accepted" in response.json()["detail"]
    assert client.get("/readyz").status_code == 503
    assert client.get("/healthz").status_code == 200


def test_readyz_is_200_when_redis_answers(client: TestClient) -> None:
    assert client.get("/readyz").json() == {"status": "ready"}


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH"])
def test_other_methods_are_405_not_500(client: TestClient, method: str) -> None:
    assert client.request(method, "/webhooks/inbound").status_code == 405


def test_errors_never_echo_the_secret(client: TestClient, post_event: Post) -> None:
    for response in (
        post_event(client, event_body(), secret="wrong"),
        post_event(client, b"{oops"),
        client.post("/webhooks/inbound", content=b"{}", headers={"X-Signature-256": SECRET}),
    ):
        assert SECRET not in response.text


def test_the_signature_is_checked_before_the_body_is_parsed(
    client: TestClient,
) -> None:
    # An unsigned non-JSON body must be refused as unsigned, not reported as bad JSON.
    response = client.post(
        "/webhooks/inbound", content=b"{oops", headers={"X-Signature-256": "0" * 64}
    )
    assert response.status_code == 401


def test_the_accepted_answer_is_json(client: TestClient, post_event: Post) -> None:
    response = post_event(client, event_body("evt_json"))
    assert response.headers["content-type"] == "application/json"
    assert json.loads(response.content) == {"status": "accepted", "id": "evt_json"}
