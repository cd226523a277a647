"""The key fetcher against a local key server of the test's own: one fetch for a key asked
for twice at once, a 503 for an answer that is too large or not a key, a refusal without
a request for a URL off the allow-list, and a fetch still running when the loop ends."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from app.keyfetch import MAX_BYTES, Fetch, KeyFetcher, KeyRefused, KeyUnavailable

Answer = Callable[[asyncio.StreamWriter], Awaitable[None]]


@asynccontextmanager
async def key_server(answer: Answer) -> AsyncIterator[tuple[str, list[bytes]]]:
    """An HTTP server on loopback; yields its URL and the request lines it got."""
    requests: list[bytes] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        requests.append(await reader.readline())
        await reader.readuntil(b"\r\n\r\n")
        await answer(writer)
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"http://127.0.0.1:{port}/key.pem", requests


def body(content: bytes, delay: float = 0.0) -> Answer:
    async def answer(writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(delay)
        head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(content)}\r\nConnection: close\r\n\r\n"
        writer.write(head.encode() + content)
        await writer.drain()

    return answer


def fetcher() -> KeyFetcher:
    return KeyFetcher(["http://127.0.0.1:*"], 5.0)


def as_key(raw: bytes) -> str:
    if not raw.startswith(b"KEY "):
        raise ValueError("not a key")
    return raw.decode()


def test_a_key_asked_for_twice_at_once_is_fetched_once() -> None:
    async def scenario() -> tuple[list[Any], list[bytes]]:
        # The answer waits a moment, so the second request comes while the first fetches.
        async with key_server(body(b"KEY one", delay=0.2)) as (url, requests):
            keys = KeyFetcher(["http://127.0.0.1:*"], 5.0)
            both = await asyncio.gather(
                keys.load(url, Fetch(url), as_key, source="sns"),
                keys.load(url, Fetch(url), as_key, source="sns"),
            )
            return both, requests

    both, requests = asyncio.run(scenario())
    assert both == ["KEY one", "KEY one"] and len(requests) == 1


@pytest.mark.parametrize(
    ("content", "detail"),
    [
        (b"<html>maintenance</html>", "the fetched key or certificate could not be read"),
        (b"KEY " + b"x" * MAX_BYTES, "key server answer too large"),
    ],
)
def test_an_answer_that_is_not_a_key_or_too_large_is_unavailable(
    content: bytes, detail: str
) -> None:
    async def scenario() -> None:
        async with key_server(body(content)) as (url, _):
            await fetcher().load(url, Fetch(url), as_key, source="sns")

    with pytest.raises(KeyUnavailable) as error:
        asyncio.run(scenario())
    assert str(error.value) == detail


def test_a_url_off_the_allow_list_is_refused_without_a_request() -> None:
    async def scenario() -> list[bytes]:
        async with key_server(body(b"KEY one")) as (url, requests):
            # An SNS subscription's SubscribeURL: fetched, not parsed, yet allowed first.
            with pytest.raises(KeyRefused, match="not on WEBHOOK_FETCH_ALLOW"):
                await KeyFetcher(["https://sns.*.amazonaws.com"], 5.0).fetch(Fetch(url))
            return requests

    assert asyncio.run(scenario()) == []


def test_a_fetch_still_running_when_the_loop_ends_is_dropped_quietly() -> None:
    reported: list[dict[str, Any]] = []
    keys = fetcher()

    async def scenario() -> None:
        asyncio.get_running_loop().set_exception_handler(
            lambda _, context: reported.append(context)
        )
        arrived = asyncio.Event()

        async def never(writer: asyncio.StreamWriter) -> None:
            arrived.set()
            await asyncio.Event().wait()

        async with key_server(never) as (url, _):
            loading = asyncio.ensure_future(keys.load(url, Fetch(url), as_key, source="sns"))
            await arrived.wait()
        # Returning ends the loop (a receiver shutting down): the fetch is cancelled.
        assert not loading.done()

    with asyncio.Runner() as runner:
        runner.run(scenario())
    # The key server's own handler, cancelled too, is asyncio's to report, not ours.
    ours = [c for c in reported if "KeyFetcher" in str(c.get("message"))]
    assert ours == []
