"""The HTTP guard where uvicorn closed the connection first (bad bytes past a head) and
where a body still trickles in after its request was answered; on uvicorn's own protocol,
fed bytes through a recording transport (as tests/test_uvicorn_seams.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from prometheus_client import REGISTRY
from uvicorn.config import Config
from uvicorn.server import ServerState

from app.http_guard import GuardedHttpToolsProtocol
from app.process_settings import KEY
from app.settings import Settings
from tests.conftest import SECRET
from tests.test_uvicorn_seams import REQUEST, Transport, answered, echo, web_option

Scenario = Callable[[GuardedHttpToolsProtocol, Transport], Awaitable[None]]


def run(scenario: Scenario, app: Any = echo, **settings: Any) -> None:
    async def main() -> None:
        config = Config(app=app, http=web_option("--http"), ws=web_option("--ws"))
        config.load()
        loaded = Settings.load(_env_file=None, webhook_signing_secret=SECRET, **settings)
        protocol = config.http_protocol_class(  # type: ignore[call-arg]
            config=config,
            server_state=ServerState(),
            app_state={KEY: loaded},
            _loop=asyncio.get_running_loop(),
        )
        assert isinstance(protocol, GuardedHttpToolsProtocol)
        transport = Transport()
        protocol.connection_made(transport)
        try:
            await scenario(protocol, transport)
        finally:
            protocol.connection_lost(None)

    asyncio.run(main())


def cuts(reason: str) -> float:
    return REGISTRY.get_sample_value("webhooks_connections_cut_total", {"reason": reason}) or 0.0


def test_a_read_past_the_head_limit_that_uvicorn_refuses_as_bad_http_gets_its_400_alone() -> None:
    async def scenario(protocol: Any, transport: Transport) -> None:
        before = cuts("header_too_large")
        protocol.data_received(b"\x01 not http\r\n" + b"x" * protocol.limits.max_header_bytes)
        assert transport.is_closing()
        assert bytes(transport.written).startswith(b"HTTP/1.1 400")
        assert b"431" not in transport.written and cuts("header_too_large") == before

    run(scenario)


def test_bad_bytes_after_a_whole_request_in_a_read_past_the_limit_are_not_read_on() -> None:
    async def scenario(protocol: Any, transport: Transport) -> None:
        garbage = b"\x01 not http\r\n" + b"x" * protocol.limits.max_header_bytes
        protocol.data_received(REQUEST + b"0123456789" + garbage)
        assert transport.is_closing()
        assert transport.written.count(b"HTTP/1.1 400") == 1

    run(scenario)


async def answer_unread(scope: Any, receive: Any, send: Any) -> None:
    """Answers without reading the body: a refusal decided on the head alone."""
    await send({"type": "http.response.start", "status": 401, "headers": []})
    await send({"type": "http.response.body", "body": b""})


def test_a_body_still_coming_after_its_request_was_answered_is_cut_at_the_next_check() -> None:
    async def scenario(protocol: Any, transport: Transport) -> None:
        before = cuts("unread_body")
        protocol.data_received(REQUEST + b"01234")  # five of its ten bytes
        assert (await answered(transport)).startswith(b"HTTP/1.1 401")
        for _ in range(500):  # until the body check's deadline (a tenth of a second)
            if transport.is_closing():
                break
            await asyncio.sleep(0.01)
        assert cuts("unread_body") == before + 1

    run(scenario, answer_unread, webhook_body_timeout=0.1)
