"""Where the HTTP guard (app/http_guard.py) leans on uvicorn beyond its documented API,
pinned, so that a uvicorn upgrade that changes one fails here first. docs/internals.md's "uvicorn
internals we rely on" lists each with its test. The guard runs here on uvicorn's own
protocol machinery, fed bytes through a transport that records what is written."""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from uvicorn.config import Config
from uvicorn.server import ServerState

from app.http_guard import GuardedHttpToolsProtocol
from app.process_settings import KEY
from app.settings import Settings
from tests.conftest import SECRET
from tests.processes import procfile

REQUEST = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n"


class Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.closing = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 5555)}.get(name)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += data

    def close(self) -> None:
        self.closing = True

    def is_closing(self) -> bool:
        return self.closing

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def echo(scope: Any, receive: Any, send: Any) -> None:
    """Reads the whole body and answers it, with the number of headers it was given."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    count = str(len(scope["headers"])).encode()
    headers = [(b"content-length", b"%d" % len(body)), (b"x-headers", count)]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


Scenario = Callable[[GuardedHttpToolsProtocol, Transport, ServerState], Awaitable[None]]


@pytest.fixture
def run() -> Callable[[Scenario], None]:
    """Runs a scenario against one guarded connection, on uvicorn's own config loading."""

    def go(scenario: Scenario) -> None:
        async def main() -> None:
            config = Config(app=echo, http=web_option("--http"), ws=web_option("--ws"))
            config.load()
            server_state = ServerState()
            protocol = config.http_protocol_class(  # type: ignore[call-arg]
                config=config,
                server_state=server_state,
                app_state={KEY: Settings.load(_env_file=None, webhook_signing_secret=SECRET)},
                _loop=asyncio.get_running_loop(),
            )
            assert isinstance(protocol, GuardedHttpToolsProtocol)
            transport = Transport()
            protocol.connection_made(transport)
            try:
                await scenario(protocol, transport, server_state)
            finally:
                protocol.connection_lost(None)

        asyncio.run(main())

    return go


def web_option(name: str) -> str:
    words = shlex.split(procfile()["web"])
    return words[words.index(name) + 1]


async def answered(transport: Transport) -> bytes:
    for _ in range(100):
        if b"\r\n\r\n" in transport.written:
            return bytes(transport.written)
        await asyncio.sleep(0)
    raise AssertionError(f"no answer: {bytes(transport.written)!r}")


def test_uvicorn_takes_the_procfiles_http_option_as_an_import_string_and_ws_none() -> None:
    config = Config(app=echo, http=web_option("--http"), ws=web_option("--ws"))
    config.load()
    assert config.http_protocol_class is GuardedHttpToolsProtocol
    assert config.ws_protocol_class is None  # no upgrade hands a connection to another class


def test_the_guard_counts_itself_in_the_servers_set_of_connections(
    run: Callable[[Scenario], None],
) -> None:
    async def scenario(protocol: Any, transport: Transport, server_state: ServerState) -> None:
        assert server_state.connections == {protocol}
        assert protocol.connections is server_state.connections

    run(scenario)


def test_a_request_read_whole_reaches_the_app_with_every_header_and_arms_no_deadline(
    run: Callable[[Scenario], None],
) -> None:
    async def scenario(protocol: Any, transport: Transport, server_state: ServerState) -> None:
        protocol.data_received(REQUEST + b"0123456789")
        assert protocol.deadline is None  # on_headers_complete, on_message_complete ran
        answer = await answered(transport)
        assert answer.startswith(b"HTTP/1.1 200") and b"x-headers: 2" in answer
        assert answer.endswith(b"0123456789")
        assert protocol.cycle.response_complete
        assert protocol.is_idle and list(protocol.idle_ones) == [protocol]  # on_response_complete

    run(scenario)


def test_a_body_split_across_reads_is_timed_until_it_ends(
    run: Callable[[Scenario], None],
) -> None:
    async def scenario(protocol: Any, transport: Transport, server_state: ServerState) -> None:
        protocol.data_received(REQUEST + b"01234")
        assert protocol.deadline is not None and not protocol.reading_head
        assert protocol.body_seen == protocol.received  # on_body ran
        assert protocol.flow.read_paused is False
        protocol.data_received(b"56789")
        assert protocol.deadline is None and protocol.reading_head
        assert (await answered(transport)).endswith(b"0123456789")

    run(scenario)


def test_the_app_uvicorn_reads_at_headers_complete_is_the_one_that_answers(
    run: Callable[[Scenario], None],
) -> None:
    async def scenario(protocol: Any, transport: Transport, server_state: ServerState) -> None:
        many = b"".join(b"X-%d: v\r\n" % n for n in range(protocol.limits.max_headers))
        protocol.data_received(REQUEST.replace(b"Host: x\r\n", b"Host: x\r\n" + many))
        answer = await answered(transport)
        assert answer.startswith(b"HTTP/1.1 431") and b"connection: close" in answer
        assert protocol.app is protocol.config.loaded_app  # put back for the next request

    run(scenario)
