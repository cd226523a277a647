"""The receiver's startup when a check refuses: with a client of the caller's, that client
is left to its caller; under `uvicorn --lifespan off`, the refusal is logged once and every
request is answered 503, never 500."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis

from app.main import Application, create_app
from app.settings import ConfigError, Settings
from tests.conftest import SECRET
from workers.dev.redis_server import RedisServer


@pytest.fixture
def wait_denied(limited_url: Callable[..., str]) -> str:
    """The URL of a Redis user denied WAIT: a receiver with WEBHOOK_REPLICA_ACKS refuses it."""
    return limited_url("wait")


async def start(app: Any) -> list[dict[str, Any]]:
    """Run the app's lifespan startup as uvicorn does; the messages it sent."""
    sent: list[dict[str, Any]] = []
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    inbox.put_nowait({"type": "lifespan.startup"})

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
    with pytest.raises(ConfigError):
        await app(scope, inbox.get, send)
    return sent


def test_a_refused_startup_leaves_the_callers_redis_client_open(
    make_settings: Callable[..., Settings], wait_denied: str
) -> None:
    settings = make_settings(redis_url=wait_denied, webhook_replica_acks=1)

    async def run() -> tuple[list[dict[str, Any]], int, int]:
        client = aioredis.Redis.from_url(wait_denied, single_connection_client=True)
        try:
            before = await client.client_id()
            sent = await start(create_app(settings, redis=client))
            return sent, before, await client.client_id()  # the same connection
        finally:
            await client.aclose()

    sent, before, after = asyncio.run(run())
    assert [m["type"] for m in sent] == ["lifespan.startup.failed"]
    assert before == after


def test_without_a_lifespan_a_refused_start_is_logged_once_and_each_request_is_503(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    wait_denied: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.chdir(tmp_path)  # no .env of the checkout
    monkeypatch.setenv("REDIS_URL", wait_denied)
    monkeypatch.setenv("WEBHOOK_SIGNING_SECRET", SECRET)
    monkeypatch.setenv("WEBHOOK_REPLICA_ACKS", "1")

    async def run() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=Application())  # sends no lifespan
        async with httpx.AsyncClient(transport=transport, base_url="http://receiver") as client:
            return [
                await client.post("/webhooks/inbound", content=b"{}"),
                await client.get("/readyz"),
            ]

    responses = asyncio.run(run())
    assert [r.status_code for r in responses] == [503, 503]
    assert all(r.json() == {"detail": "receiver not ready; retry later"} for r in responses)
    refusals = [r for r in caplog.records if "the server refused WAIT" in r.getMessage()]
    assert len(refusals) == 1 and refusals[0].levelname == "ERROR"


def test_a_delivery_before_the_lifespan_started_is_503_not_ready(
    make_settings: Callable[..., Settings],
) -> None:
    async def run() -> httpx.Response:
        transport = httpx.ASGITransport(app=create_app(make_settings()))  # no lifespan yet
        async with httpx.AsyncClient(transport=transport, base_url="http://receiver") as client:
            return await client.post("/webhooks/inbound", content=b"{}")

    response = asyncio.run(run())
    assert response.status_code == 503
    assert response.json()["detail"] == "not ready; retry later"


def test_without_a_lifespan_the_first_request_starts_the_receiver_which_ends_quietly(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, redis_server: RedisServer
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REDIS_URL", redis_server.url)
    monkeypatch.setenv("WEBHOOK_SIGNING_SECRET", SECRET)
    reported: list[dict[str, Any]] = []

    async def run() -> httpx.Response:
        asyncio.get_running_loop().set_exception_handler(
            lambda _, context: reported.append(context)
        )
        transport = httpx.ASGITransport(app=Application())
        async with httpx.AsyncClient(transport=transport, base_url="http://receiver") as client:
            return await client.get("/readyz")

    # The process's end cancels the startup's lifespan, which then says its shutdown failed:
    # that second message must end it quietly, as uvicorn's own end of a lifespan would.
    with asyncio.Runner() as runner:
        response = runner.run(run())
    assert response.status_code == 200 and response.json() == {"status": "ready"}
    assert [c["message"] for c in reported] == []
