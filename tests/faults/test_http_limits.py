"""The receiver's HTTP edges against a real uvicorn: oversized bodies, streamed bodies and a
stalled Redis, each with a raw socket or a paused server, as providers meet them."""

from __future__ import annotations

import socket
from collections.abc import Callable

import httpx
import pytest
from redis import Redis

from app.keys import job_id_for
from tests.conftest import event_body, sign
from tests.processes import Process, Stack, send, wait_until
from workers.dev.redis_server import RedisServer

LIMIT = 65_536


@pytest.fixture
def web(redis_server: RedisServer, redis: Redis, make_stack: Callable[..., Stack]) -> Process:
    return make_stack(redis_server.url, WEBHOOK_MAX_BODY_BYTES=str(LIMIT)).start("web")


def read_answer(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def head(length: int | None) -> bytes:
    framing = f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked"
    return (
        "POST /webhooks/inbound HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        f"Content-Type: application/json\r\n{framing}\r\n\r\n"
    ).encode()


def chunked(body: bytes, size: int = 16_384) -> bytes:
    parts = [
        b"%x\r\n%s\r\n" % (len(body[i : i + size]), body[i : i + size])
        for i in range(0, len(body), size)
    ]
    return b"".join(parts) + b"0\r\n\r\n"


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_a_client_that_writes_its_whole_oversized_body_first_still_reads_the_413(
    web: Process, framing: str
) -> None:
    # 8 MB: far more than the kernel's socket buffers, so a server that closes with unread
    # input resets the connection while the client is still writing.
    body = b"x" * (8 * 1024 * 1024)
    wire = head(len(body)) + body if framing == "content-length" else head(None) + chunked(body)
    with socket.create_connection(("127.0.0.1", web.port), timeout=20) as sock:
        sock.sendall(wire)  # raises ConnectionResetError when the server gave up reading
        answer = read_answer(sock)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]


def test_a_client_that_expects_100_continue_gets_the_413_without_sending_its_body(
    web: Process,
) -> None:
    with socket.create_connection(("127.0.0.1", web.port), timeout=10) as sock:
        sock.sendall(head(10 * LIMIT).replace(b"\r\n\r\n", b"\r\nExpect: 100-continue\r\n\r\n"))
        answer = read_answer(sock)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]


def test_a_streamed_body_is_refused_as_soon_as_it_passes_the_limit(web: Process) -> None:
    # The client sends a little over the limit, then waits: a receiver that buffers the
    # whole body before judging it never answers, one that counts as it reads does.
    with socket.create_connection(("127.0.0.1", web.port), timeout=10) as sock:
        sock.sendall(head(None) + b"%x\r\n%s\r\n" % (LIMIT + 1, b"x" * (LIMIT + 1)))
        answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]


def test_a_stalled_redis_gets_a_503_within_the_ack_budget_and_the_retry_is_a_duplicate(
    redis_server: RedisServer, redis: Redis, make_stack: Callable[..., Stack]
) -> None:
    web = make_stack(redis_server.url, WEBHOOK_ACK_TIMEOUT="0.5").start("web")
    body = event_body("evt_stalled")
    pauser = Redis.from_url(redis_server.url)
    pauser.execute_command("CLIENT", "PAUSE", 3000, "ALL")
    # Without a budget the request waits for Redis, which answers after 3 s: a 200.
    during = httpx.post(
        f"{web.url}/webhooks/inbound",
        content=body,
        headers={"X-Signature-256": sign(body)},
        timeout=20,
    )
    assert during.status_code == 503, during.text
    assert "WEBHOOK_ACK_TIMEOUT" in during.json()["detail"]
    # Once Redis is back, the claim sent during the pause lands: the provider's retry is
    # then a duplicate, and there is exactly one job.
    job_key = f"rq:job:{job_id_for('inbound', 'evt_stalled')}"
    wait_until(lambda: redis.exists(job_key) == 1, 20, "the late claim to land")
    retry = send(web.url, "evt_stalled", timeout=20)
    assert retry.json()["status"] == "duplicate"
    assert redis.lrange("rq:queue:webhooks", 0, -1) == [
        job_id_for("inbound", "evt_stalled").encode()
    ]


def test_readyz_answers_within_the_ack_budget_while_redis_is_stalled(
    redis_server: RedisServer, redis: Redis, make_stack: Callable[..., Stack]
) -> None:
    web = make_stack(redis_server.url, WEBHOOK_ACK_TIMEOUT="0.5").start("web")
    Redis.from_url(redis_server.url).execute_command("CLIENT", "PAUSE", 3000, "ALL")
    # Without a budget the ping waits for Redis, which answers after 3 s: a 200.
    assert httpx.get(web.url + "/readyz", timeout=20).status_code == 503


# --- the request head --------------------------------------------------------------------

FLOOD = 32 * 1024 * 1024


def exchange(port: int, data: bytes) -> bytes:
    """Send a whole request, then read what comes back until the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(data)
        return read_answer(sock)


@pytest.mark.parametrize(
    "before",
    [
        b"POST /webhooks/inbound HTTP/1.1\r\nHost: x\r\n",
        # A chunked body's trailer section is a header block too.
        b"POST /webhooks/inbound HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"2\r\n{}\r\n0\r\n",
    ],
    ids=["headers", "trailers"],
)
def test_a_flood_of_header_lines_is_cut_off_long_before_it_is_read_whole(
    web: Process, before: bytes
) -> None:
    burst = (b"X-Filler: " + b"a" * 1014 + b"\r\n") * 64  # 64 header lines of 1 KiB
    sent = 0
    answer = b""
    with socket.create_connection(("127.0.0.1", web.port), timeout=20) as sock:
        try:
            sock.sendall(before)
            while sent < FLOOD:
                sock.sendall(burst)
                sent += len(burst)
            sock.sendall(b"\r\n")
            answer = read_answer(sock)
        except (ConnectionResetError, BrokenPipeError):
            pass  # the server closed on the rest of the flood: what it should do
    assert sent < FLOOD, f"the server read {sent} bytes of headers, then: {answer[:100]!r}"
    assert send(web.url, "evt_after_flood").json()["status"] == "accepted"


def test_a_head_over_the_byte_limit_is_answered_431(web: Process) -> None:
    answer = exchange(
        web.port,
        b"POST /webhooks/inbound HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20_000 + b"\r\n"
        b"Content-Length: 2\r\n\r\n{}",
    )
    assert answer.startswith(b"HTTP/1.1 431"), answer[:200]


def test_more_headers_than_the_limit_are_answered_431(web: Process) -> None:
    many = b"".join(b"X-H%d: v\r\n" % n for n in range(120))
    answer = exchange(
        web.port,
        b"POST /webhooks/inbound HTTP/1.1\r\nHost: x\r\n" + many + b"Content-Length: 2\r\n\r\n{}",
    )
    assert answer.startswith(b"HTTP/1.1 431"), answer[:200]
    assert b'"detail"' in answer


def test_a_delivery_with_headers_close_to_both_limits_is_accepted(web: Process) -> None:
    # 85 headers of about 170 bytes (15 KB), besides httpx's own and the signature: more
    # than a provider sends through two proxies.
    body = event_body("evt_many_headers")
    padding = {f"X-Pad-{n:02d}": "p" * 160 for n in range(85)}
    response = httpx.post(
        f"{web.url}/webhooks/inbound",
        content=body,
        headers={**padding, "X-Signature-256": sign(body)},
        timeout=20,
    )
    assert response.json()["status"] == "accepted"
