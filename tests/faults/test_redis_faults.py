"""Redis going away, and Redis killed: nothing acknowledged is lost, nothing needs a restart."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from fastapi.testclient import TestClient
from redis import Redis

from app.settings import ConfigError, Settings
from tests.processes import Stack, effects, send, wait_until
from workers.dev.redis_server import RedisServer


def test_redis_outage_is_503_and_receiver_and_worker_recover_without_restart(
    own_redis: RedisServer, make_stack: Callable[..., Stack]
) -> None:
    stack = make_stack(own_redis.url)
    web, worker = stack.start("web"), stack.start("worker")
    redis = Redis.from_url(own_redis.url)
    assert send(web.url, "evt_before").json()["status"] == "accepted"
    wait_until(lambda: effects(redis, "evt_before") == 1, 30, "the first event")

    own_redis.stop()
    during = send(web.url, "evt_during")
    assert during.status_code == 503 and "nothing was accepted" in during.json()["detail"]
    assert httpx.get(web.url + "/readyz").status_code == 503

    own_redis.start()  # same port, same data directory
    wait_until(lambda: httpx.get(web.url + "/readyz").status_code == 200, 30, "readyz")
    assert send(web.url, "evt_during").json()["status"] == "accepted"  # the provider's retry
    assert send(web.url, "evt_after").json()["status"] == "accepted"
    wait_until(
        lambda: effects(redis, "evt_after") == 1 and effects(redis, "evt_during") == 1,
        60,
        "the worker to drain after the outage",
    )
    assert web.popen.poll() is None and worker.popen.poll() is None  # no restart needed
    assert "Traceback" not in web.output()


def test_every_acknowledged_event_survives_redis_sigkill(
    own_redis: RedisServer, make_stack: Callable[..., Stack]
) -> None:
    stack = make_stack(own_redis.url)
    web = stack.start("web")
    stack.start("worker")
    acked: list[str] = []
    lock = threading.Lock()
    kill_at = 150

    def deliver(n: int) -> None:
        try:
            response = send(web.url, f"evt_{n}", timeout=5)
        except httpx.HTTPError:
            return
        if response.status_code == 200 and response.json()["status"] == "accepted":
            with lock:
                acked.append(f"evt_{n}")
                if len(acked) == kill_at:
                    own_redis.kill()  # SIGKILL, mid-burst: only what AOF fsynced survives

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(deliver, range(400)))
    assert len(acked) >= kill_at

    own_redis.start()
    redis = Redis.from_url(own_redis.url)
    wait_until(
        lambda: all(effects(redis, i) >= 1 for i in acked),
        90,
        "every acknowledged event to be handled",
    )


@pytest.mark.parametrize(
    ("extra", "warning"),
    [
        ({"appendonly": "no"}, "appendonly is off"),
        ({"appendfsync": "everysec"}, "appendfsync is 'everysec'"),
        ({"maxmemory-policy": "allkeys-lru"}, "maxmemory-policy is 'allkeys-lru'"),
    ],
)
def test_startup_warns_when_redis_could_lose_acknowledged_events(
    make_redis: Callable[..., RedisServer],
    make_settings: Callable[..., Settings],
    capfd: pytest.CaptureFixture[str],
    extra: dict[str, str],
    warning: str,
) -> None:
    from app.main import create_app

    server = make_redis(options=extra)
    with TestClient(create_app(make_settings(redis_url=server.url))):
        pass
    lines = [json.loads(x) for x in capfd.readouterr().err.splitlines() if x.startswith("{")]
    assert any(warning in line.get("msg", "") for line in lines)
    with (
        pytest.raises(ConfigError, match="WEBHOOK_REQUIRE_DURABLE_REDIS"),
        TestClient(
            create_app(make_settings(redis_url=server.url, webhook_require_durable_redis=True))
        ),
    ):
        pass


def test_a_redis_that_forbids_config_is_reported_once_and_startup_goes_on(
    make_redis: Callable[..., RedisServer],
    make_settings: Callable[..., Settings],
    capfd: pytest.CaptureFixture[str],
) -> None:
    from app.main import create_app

    server = make_redis(extra=("--rename-command", "CONFIG", ""))
    settings = make_settings(redis_url=server.url, webhook_require_durable_redis=True)
    with TestClient(create_app(settings)) as client:
        assert client.get("/readyz").status_code == 200
    err = capfd.readouterr().err
    assert err.count("CONFIG GET refused") == 1


def test_a_durable_redis_raises_no_warning(
    redis: Redis,
    make_settings: Callable[..., Settings],
    capfd: pytest.CaptureFixture[str],
) -> None:
    from app.main import create_app

    with TestClient(create_app(make_settings(webhook_require_durable_redis=True))):
        pass
    assert "redis persistence" not in capfd.readouterr().err
