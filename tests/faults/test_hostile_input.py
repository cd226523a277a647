"""Hostile input: fuzzed HTTP, malformed wire bytes, secrets that must never show."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st
from redis import Redis

from app.keys import job_id_for
from tests.conftest import AUTH
from tests.processes import Process, Stack, send, wait_http, wait_until
from tests.providers.cases import BY_NAME
from workers.dev.redis_server import RedisServer

# The sources whose headers are fuzzed below (HEADER_NAMES).
NAMES = ("inbound", "stripe", "github", "shopify", "slack", "paddle", "standard")
ALL_SOURCES = {
    "webhook_sources": ",".join(f"{BY_NAME[n].name}:{BY_NAME[n].provider}" for n in NAMES),
    "per_source": {f"WEBHOOK_SECRET_{n.upper()}": BY_NAME[n].make_key("k").secret for n in NAMES},
}
HEADER_NAMES = [
    "Content-Type",
    "Content-Length",
    "Content-Encoding",
    "X-Signature-256",
    "Stripe-Signature",
    "X-Hub-Signature-256",
    "X-GitHub-Delivery",
    "X-Shopify-Hmac-Sha256",
    "X-Slack-Signature",
    "X-Slack-Request-Timestamp",
    "Paddle-Signature",
    "webhook-id",
    "webhook-timestamp",
    "webhook-signature",
]
PATHS = [
    "/webhooks/inbound",
    "/webhooks/stripe",
    "/webhooks/slack",
    "/webhooks/",
    "/webhooks",
    "/webhooks/inbound/x",
    "/webhooks/%2e%2e",
    "/webhooks/%00",
    "/healthz",
    "/readyz",
    "/docs",
    "/openapi.json",
    "/",
    "//webhooks/inbound",
]


methods = st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"])
paths = st.one_of(
    st.sampled_from(PATHS),
    st.text(
        st.characters(min_codepoint=33, max_codepoint=126, exclude_characters="?#"), max_size=40
    ).map(lambda s: "/webhooks/" + s),
)
header_sets = st.dictionaries(
    st.sampled_from(HEADER_NAMES),
    st.text(st.characters(min_codepoint=32, max_codepoint=255), max_size=80),
    max_size=5,
)
bodies = st.one_of(
    st.binary(max_size=2000), st.just(b'{"id": "e", "type": "t"}'), st.just(b"x" * 70_000)
)


def test_the_http_surface_never_answers_500_nor_accepts_anything_unsigned(
    make_client: Callable[..., TestClient], redis: Redis
) -> None:
    client = make_client(webhook_max_body_bytes=65_536, **ALL_SOURCES)

    @settings(max_examples=300, deadline=None)
    @given(method=methods, path=paths, headers=header_sets, body=bodies)
    def check(method: str, path: str, headers: dict[str, str], body: bytes) -> None:
        wire = {k: v.encode("latin-1") for k, v in headers.items() if k != "Content-Length"}
        response = client.request(method, path, content=body, headers=wire)
        assert response.status_code < 500, (response.status_code, response.text)
        assert "accepted" not in response.text and "duplicate" not in response.text

    check()
    # Nothing but the Events page's count of refusals, which the receiver adds every 5 s.
    assert [k for k in redis.keys("*") if not k.startswith(b"webhook:timeline:")] == []


@pytest.fixture
def web(redis_server: RedisServer, redis: Redis, make_stack: Callable[..., Stack]) -> Process:
    return make_stack(redis_server.url).start("web")


def raw_exchange(port: int, data: bytes, timeout: float = 5) -> bytes:
    """Send raw bytes, half-close, read what comes back until the server closes.

    A server that closes with the sender's bytes unread (a head over the limit) makes the
    kernel answer with a reset, which may arrive before its 4xx is read: a close all the same.
    A hang still fails, on the socket's timeout.
    """
    chunks = []
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        except (ConnectionResetError, BrokenPipeError):
            pass
    return b"".join(chunks)


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GARBAGE\r\n\r\n",
        b"POST /webhooks/inbound HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}",
        b"POST /webhooks/inbound HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        b"POST /webhooks/inbound HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"zz\r\nabc\r\n0\r\n\r\n",
        b"POST /webhooks/inbound HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 100_000 + b"\r\n\r\n",
        b'POST /webhooks/inbound HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"id":',
        b"POST /webhooks/inbound HTTP/1.1\r\nHost: x\r\nX-Signature-256: \xff\xfe\r\n"
        b"Content-Length: 2\r\n\r\n{}",
    ],
    ids=[
        "garbage",
        "bad-length",
        "length-and-chunked",
        "bad-chunk",
        "huge-header",
        "truncated-body",
        "non-ascii-header",
    ],
)
def test_malformed_http_gets_a_4xx_or_a_close_never_a_5xx_or_a_hang(
    web: Process, request_bytes: bytes
) -> None:
    answer = raw_exchange(web.port, request_bytes)
    status = answer.split(b" ", 2)[1] if answer.startswith(b"HTTP/1.1 ") else b""
    assert status == b"" or status.startswith(b"4"), answer[:200]


def test_slow_clients_do_not_stop_the_receiver_from_answering_others(web: Process) -> None:
    sockets = []
    for _ in range(50):
        sock = socket.create_connection(("127.0.0.1", web.port))
        sock.sendall(b"POST /webhooks/inbound HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
        sockets.append(sock)
    try:
        started = time.monotonic()
        assert send(web.url, "evt_meanwhile").json()["status"] == "accepted"
        assert time.monotonic() - started < 5
    finally:
        for sock in sockets:
            sock.close()


# --- secrets --------------------------------------------------------------------------------


def test_secrets_never_appear_in_logs_error_bodies_or_the_dashboard(
    make_redis: Callable[..., RedisServer],
    make_stack: Callable[..., Stack],
) -> None:
    redis_password, signing_secret = "redis-pass-7Hq2", "signing-secret-9Zk4"
    dashboard_password = "dashboard-pass-3Vb8"
    server = make_redis(options={"requirepass": redis_password})
    stack = make_stack(
        server.url,
        WEBHOOK_SIGNING_SECRET=signing_secret,
        RQ_DASHBOARD_PASSWORD=dashboard_password,
        WEBHOOK_MAX_RETRIES="0",
    )
    web, worker, dashboard = stack.start("web"), stack.start("worker"), stack.start("dashboard")
    auth = (AUTH[0], dashboard_password)
    wait_http(dashboard.url + "/", dashboard, auth=auth)
    seen: list[str] = []
    with httpx.Client(timeout=10) as http:
        for body, signature in [
            (b'{"id": "e1", "type": "order.hostile"}', None),
            (b'{"id": "e2"}', "0" * 64),
            (b"{bad", signing_secret),
            (b"{}", signing_secret),
        ]:
            import hashlib
            import hmac

            sig = signature or hmac.new(signing_secret.encode(), body, hashlib.sha256).hexdigest()
            seen.append(
                http.post(
                    f"{web.url}/webhooks/inbound",
                    content=body,
                    headers={"X-Signature-256": sig},
                ).text
            )
        redis = Redis.from_url(server.url)
        wait_until(lambda: redis.zcard("rq:failed:webhooks") == 1, 30, "a dead letter")
        job_id = job_id_for("inbound", "e1")
        for path in [
            "/",
            "/0/data/queues.json",
            "/0/data/workers.json",
            "/0/view/workers",
            f"/0/data/job/{job_id}.json",
            "/0/data/jobs/webhooks/failed/8/asc/1.json",
        ]:
            seen.append(http.get(dashboard.url + path, auth=auth).text)
        seen.append(http.get(dashboard.url + "/", auth=(AUTH[0], "wrong")).text)
        seen += [http.get(web.url + p).text for p in ("/readyz", "/healthz", "/metrics")]
        # The dashboard's action log lines: one refused, one taken.
        requeue = f"{dashboard.url}/job/{job_id}/requeue"
        seen.append(http.post(requeue, auth=auth, headers={"Origin": "http://evil"}).text)
        seen.append(http.post(requeue, auth=auth, headers={"Origin": dashboard.url}).text)
        wait_until(lambda: redis.zcard("rq:failed:webhooks") == 1, 30, "dead again")
    # The operator's terminal: `webhooks dead show` and `webhooks events show`.
    env = {**os.environ, **stack.env, "WEBHOOK_SIGNING_SECRET": signing_secret}
    for command in (["dead", "show", job_id], ["events", "show", "inbound", "e1"]):
        shown = subprocess.run(
            [str(Path(sys.executable).parent / "webhooks"), *command],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        assert "e1" in shown.stdout
        seen += [shown.stdout, shown.stderr]
    for process in (web, worker, dashboard):
        process.stop()
        seen.append(process.output())
    everything = "\n".join(seen)
    for secret in (redis_password, signing_secret, dashboard_password):
        assert secret not in everything


def test_concurrent_duplicates_across_two_receivers_make_one_job(
    redis_server: RedisServer, redis: Redis, make_stack: Callable[..., Stack]
) -> None:
    stack = make_stack(redis_server.url)
    receivers = [stack.start("web"), stack.start("web")]

    def deliver(n: int) -> str:
        return str(send(receivers[n % 2].url, "evt_twice").json()["status"])

    with ThreadPoolExecutor(max_workers=40) as pool:
        statuses = list(pool.map(deliver, range(80)))
    assert statuses.count("accepted") == 1 and statuses.count("duplicate") == 79
    assert redis.lrange("rq:queue:webhooks", 0, -1) == [job_id_for("inbound", "evt_twice").encode()]
