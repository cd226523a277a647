"""Fixtures: a real redis-server the suite starts itself, and factories for the parts."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from redis import Redis

from app.main import create_app
from app.settings import Settings
from workers.redis_server import RedisServer
from workers.registry import registry
from workers.run import build_worker
from workers.worker import WebhookWorker

SECRET = "test-secret-of-inbound"
OWN_VARIABLES = ("WEBHOOK_", "REPLAY_TOLERANCE", "RQ_DASHBOARD_")
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's own configuration must not leak into what a test builds."""
    for name in list(os.environ):
        if (
            name.startswith(("WEBHOOK_", "REPLAY_TOLERANCE", "RQ_DASHBOARD_"))
            or name == "REDIS_URL"
        ):
            monkeypatch.delenv(name)


@pytest.fixture(autouse=True)
def _clean_registry() -> Iterator[None]:
    registry.clear()
    yield
    registry.clear()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.stop()


@pytest.fixture
def redis(redis_server: RedisServer) -> Iterator[Redis]:
    client = Redis.from_url(redis_server.url)
    client.flushall()
    yield client
    client.close()


@pytest.fixture
def make_settings(redis_server: RedisServer) -> Callable[..., Settings]:
    def make(**overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "redis_url": redis_server.url,
            "webhook_signing_secret": SECRET,
            "webhook_retry_intervals": "0",
            "webhook_max_retries": 2,
            "rq_dashboard_username": "ops",
            "rq_dashboard_password": "dashboard-password",
        }
        values.update(overrides)
        return Settings.load(_env_file=None, **values)

    return make


@pytest.fixture
def make_client(make_settings: Callable[..., Settings]) -> Iterator[Callable[..., TestClient]]:
    clients: list[TestClient] = []

    def make(settings: Settings | None = None, **overrides: Any) -> TestClient:
        client = TestClient(create_app(settings or make_settings(**overrides)))
        client.__enter__()  # runs the lifespan, as uvicorn would
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)


def sign(body: bytes, secret: str = SECRET) -> str:
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def event_body(event_id: str = "evt_1", event_type: str = "order.created", **extra: Any) -> bytes:
    return json.dumps({"id": event_id, "type": event_type, **extra}).encode()


@pytest.fixture
def post_event() -> Callable[..., Any]:
    def post(
        client: TestClient,
        body: bytes,
        secret: str = SECRET,
        source: str = "inbound",
        headers: dict[str, str] | None = None,
    ) -> Any:
        sent = {"X-Signature-256": sign(body, secret), **(headers or {})}
        return client.post(f"/webhooks/{source}", content=body, headers=sent)

    return post


@pytest.fixture
def run_worker(redis: Redis) -> Callable[[Settings], WebhookWorker]:
    """Drains the queue with the real forking worker, in burst mode."""

    def run(settings: Settings) -> WebhookWorker:
        worker = build_worker(settings, connection=redis)
        worker.work(burst=True, logging_level="WARNING")
        return worker

    return run
