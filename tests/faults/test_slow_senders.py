"""Slow senders against the real `web:` process (the Procfile's command line): silent
connections, heads trickled line by line, bodies trickled byte by byte, and more
connections than one process takes. The server cuts each of them, and genuine deliveries
(one after another on a keep-alive connection, a large body sent steadily) are answered."""

from __future__ import annotations

import json
import select
import socket
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from redis import Redis

from tests.conftest import event_body, sign
from tests.faults.senders import GIVE_UP, Ending, drip, read_response, signed_request
from tests.processes import Process, Stack, send, wait_until
from workers.dev.redis_server import RedisServer

# WEBHOOK_HEADER_TIMEOUT and WEBHOOK_BODY_TIMEOUT of these tests, in seconds: short, so
# that the tests are; every sender below is slower than that by far.
DEADLINE = "1"
# Slow connections per test, all at once.
SLOW = 10
HEAD = b"POST /webhooks/inbound HTTP/1.1\r\nHost: x\r\n"
# With these (and WEBHOOK_HEADER_TIMEOUT=300), no timeout ends a connection during a test:
# only the connection cap can.
UNTIMED = "--timeout-keep-alive 300"


@pytest.fixture
def make_web(
    redis_server: RedisServer, redis: Redis, make_stack: Callable[..., Stack]
) -> Callable[..., Process]:
    def make(extra_args: str = "", **env: str) -> Process:
        deadlines = {"WEBHOOK_HEADER_TIMEOUT": DEADLINE, "WEBHOOK_BODY_TIMEOUT": DEADLINE}
        return make_stack(redis_server.url, **{**deadlines, **env}).start("web", extra_args)

    return make


@pytest.fixture
def web(make_web: Callable[..., Process]) -> Process:
    return make_web()


def all_at_once(sender: Callable[[int], Ending], count: int = SLOW) -> list[Ending]:
    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(sender, range(count)))


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=GIVE_UP)


def test_silent_connections_are_answered_408_and_closed(web: Process) -> None:
    endings = all_at_once(lambda _: drip(connect(web.port), b""))
    assert all(e.closed_by_server for e in endings), endings
    assert all(e.answer.startswith(b"HTTP/1.1 408") for e in endings), endings
    assert send(web.url, "evt_after_silence").json()["status"] == "accepted"


def test_a_head_trickled_line_by_line_is_cut_at_the_header_deadline(web: Process) -> None:
    endings = all_at_once(lambda _: drip(connect(web.port), HEAD, b"X-Slow: 1\r\n"))
    assert all(e.closed_by_server for e in endings), endings
    # A 408, unless the server's close crossed a line in flight (then a reset).
    assert all(e.answer[:12] in (b"", b"HTTP/1.1 408") for e in endings), endings
    assert send(web.url, "evt_after_slow_heads").json()["status"] == "accepted"


@pytest.mark.parametrize(
    ("framing", "piece"),
    [
        (b"Content-Length: 1000\r\n\r\n{", b" "),
        (b"Transfer-Encoding: chunked\r\n\r\n1\r\n{\r\n", b"1\r\n \r\n"),
    ],
    ids=["content-length", "chunked"],
)
def test_a_body_trickled_byte_by_byte_is_cut_at_the_body_deadline(
    web: Process, framing: bytes, piece: bytes
) -> None:
    endings = all_at_once(lambda _: drip(connect(web.port), HEAD + framing, piece))
    assert all(e.closed_by_server for e in endings), endings
    assert not any(e.answer.startswith(b"HTTP/1.1 5") for e in endings), endings
    assert send(web.url, "evt_after_slow_bodies").json()["status"] == "accepted"
    assert "Traceback" not in web.output()


@pytest.mark.parametrize(
    ("first", "piece"), [(HEAD, b"X-Slow: 1\r\n"), (b"", b"\r\n")], ids=["headers", "blank-lines"]
)
def test_a_keep_alive_connection_whose_next_request_trickles_is_cut(
    web: Process, first: bytes, piece: bytes
) -> None:
    """The header deadline starts again with each request on a connection; uvicorn's own
    keep-alive timeout restarts at every byte, so it never ends a trickle."""

    def sender(n: int) -> Ending:
        sock = connect(web.port)
        sock.sendall(signed_request(f"evt_before_trickle_{n}"))
        status, body = read_response(sock)
        assert (status, json.loads(body)["status"]) == (200, "accepted")
        return drip(sock, first, piece)

    endings = all_at_once(sender)
    assert all(e.closed_by_server for e in endings), endings


def test_a_keep_alive_connection_serves_delivery_after_delivery_across_idle_gaps(
    web: Process,
) -> None:
    # The gap is longer than the header deadline and shorter than uvicorn's keep-alive
    # timeout (5 s): an idle connection between requests is not a slow head.
    with connect(web.port) as sock:
        for n, gap in enumerate([0, 1.5, 0]):
            time.sleep(gap)
            sock.sendall(signed_request(f"evt_keep_alive_{n}"))
            status, body = read_response(sock)
            assert (status, json.loads(body)["status"]) == (200, "accepted")


def test_a_large_body_sent_steadily_across_several_deadlines_is_accepted(web: Process) -> None:
    body = event_body("evt_large", pad="x" * 1_000_000)
    head = (
        f"POST /webhooks/inbound HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n"
        f"X-Signature-256: {sign(body)}\r\n\r\n"
    ).encode()
    with connect(web.port) as sock:
        sock.sendall(head)
        # About 300 KB/s, so about 3 s: a body deadline every second, none reached.
        for start in range(0, len(body), 32_768):
            sock.sendall(body[start : start + 32_768])
            time.sleep(0.1)
        status, answer = read_response(sock)
    assert (status, json.loads(answer)["status"]) == (200, "accepted")


def closed_ones(socks: list[socket.socket], enough: int) -> dict[socket.socket, bytes]:
    """Wait until `enough` of `socks` have been closed by the server (or GIVE_UP passes);
    what each closed one had been answered."""
    answers: dict[socket.socket, bytes] = {}
    closed: dict[socket.socket, bytes] = {}
    stop = time.monotonic() + GIVE_UP
    while len(closed) < enough and time.monotonic() < stop:
        readable, _, _ = select.select([s for s in socks if s not in closed], [], [], 0.2)
        for sock in readable:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                chunk = b""
            if chunk:
                answers[sock] = answers.get(sock, b"") + chunk
            else:
                closed[sock] = answers.get(sock, b"")
    return closed


def test_connections_past_the_cap_are_answered_503_at_once_and_closed(
    make_web: Callable[..., Process],
) -> None:
    web = make_web(UNTIMED, WEBHOOK_MAX_CONNECTIONS="5", WEBHOOK_HEADER_TIMEOUT="300")
    socks = [connect(web.port) for _ in range(15)]
    try:
        refused = closed_ones(socks, enough=10)
        assert len(refused) >= 10, f"{len(refused)} of 15 connections refused at a cap of 5"
        assert all(a.startswith(b"HTTP/1.1 503") for a in refused.values()), refused
        # The cap holds for a delivery too, while the five are held.
        assert not accepted(web, "evt_at_the_cap")
    finally:
        for sock in socks:
            sock.close()
    # A provider's retry, once the slots are free, is accepted.
    wait_until(lambda: accepted(web, "evt_at_the_cap"), 20, "a delivery after the cap")


def accepted(web: Process, event_id: str) -> bool:
    try:
        return send(web.url, event_id).status_code == 200
    except httpx.TransportError:
        return False


def test_at_the_cap_an_idle_keep_alive_connection_makes_room_for_a_new_one(
    make_web: Callable[..., Process],
) -> None:
    web = make_web(UNTIMED, WEBHOOK_MAX_CONNECTIONS="5", WEBHOOK_HEADER_TIMEOUT="300")
    idle = [connect(web.port) for _ in range(5)]
    try:
        for n, sock in enumerate(idle):
            sock.sendall(signed_request(f"evt_idle_{n}"))
            assert read_response(sock)[0] == 200
        # Five idle keep-alive connections fill the cap; a new delivery still gets in.
        assert send(web.url, "evt_past_the_idle").json()["status"] == "accepted"
        assert closed_ones(idle, enough=1), "no idle connection was closed to make room"
    finally:
        for sock in idle:
            sock.close()
