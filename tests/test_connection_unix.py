"""REDIS_URL=unix://...: every process reaches Redis over its socket."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from redis import Redis

from app.connection import OPERATOR, async_client, sync_client
from app.settings import Settings
from workers.dev.redis_server import RedisServer


def test_a_unix_socket_url_reaches_redis_from_the_blocking_and_the_async_clients(
    make_redis: Callable[..., RedisServer],
    make_settings: Callable[..., Settings],
    tmp_path: Path,
) -> None:
    socket = tmp_path / "redis.sock"
    server = make_redis(options={"unixsocket": str(socket), "unixsocketperm": "700"})
    settings = make_settings(redis_url=f"unix://{socket}?db=3")
    with sync_client(settings, OPERATOR) as blocking:
        blocking.set("written", "over the socket")

    async def read() -> bytes | None:
        client = async_client(settings)
        try:
            return await client.get("written")
        finally:
            await client.aclose()

    assert asyncio.run(read()) == b"over the socket"
    # On that server, in that database: not a Redis listening on a default port.
    with Redis(port=server.port, db=3) as direct:
        assert direct.get("written") == b"over the socket"
