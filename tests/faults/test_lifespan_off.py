"""The `web:` process under `uvicorn --lifespan off`, where no startup event ever comes:
the first request starts the receiver."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from redis import Redis

from tests.conftest import SECRET
from tests.processes import Stack, send, start, wait_until
from workers.dev.redis_server import RedisServer, free_port


def test_under_lifespan_off_deliveries_are_accepted_and_readyz_is_200(
    redis_server: RedisServer, redis: Redis, make_stack: Callable[..., Stack]
) -> None:
    web = make_stack(redis_server.url).start("web", "--lifespan off")
    # The first requests arrive together, as a provider's burst would: one startup.
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda n: send(web.url, f"evt_off_{n}"), range(8)))
    assert [a.json()["status"] for a in answers] == ["accepted"] * 8
    assert httpx.get(web.url + "/readyz", timeout=10).status_code == 200
    assert redis.llen("rq:queue:webhooks") == 8
    assert web.output().count("receiver started") == 1


def test_under_lifespan_off_a_bad_configuration_is_a_503_and_one_line_never_a_500(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    env = {
        "REDIS_URL": redis_server.url,
        "HOST": "127.0.0.1",
        "PORT": str(free_port()),
        "WEBHOOK_SIGNING_SECRET": SECRET,
        "WEBHOOK_SOURCES": "inbound,stripe",  # and no WEBHOOK_SECRET_STRIPE
    }
    web = start("web", env, tmp_path, "--lifespan off")
    web.port = int(env["PORT"])
    try:
        wait_until(lambda: answers(web.url + "/healthz"), 20, "the web process to answer")
        assert send(web.url, "evt_misconfigured").status_code == 503
        assert httpx.get(web.url + "/readyz", timeout=10).status_code == 503
    finally:
        web.stop()
    assert web.output().count("WEBHOOK_SECRET_STRIPE is not set") == 1
    assert "Traceback" not in web.output()


def answers(url: str) -> bool:
    try:
        httpx.get(url, timeout=1)
    except httpx.TransportError:
        return False
    return True
