"""The `webhooks replay` tests' environment: fake Stripe and GitHub APIs and the variables
that point the command at them and at the suite's Redis."""

from __future__ import annotations

import time
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest
from redis import Redis

from tests.conftest import SECRET
from tests.fake_apis import FakeApi
from workers.dev.redis_server import RedisServer
from workers.ops.provider_apis import Api

NOW = int(time.time())


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits the replay's API client asked for, recorded instead of slept: its `sleep`
    seam, so that the rest of the process (Redis, the fake API's threads) sleeps as usual."""
    waited: list[float] = []
    monkeypatch.setattr("workers.ops.provider_replay.Api", partial(Api, sleep=waited.append))
    return waited


@pytest.fixture
def api(waits: list[float]) -> Iterator[FakeApi]:
    fake = FakeApi().start()
    yield fake
    fake.stop()


@pytest.fixture
def env(
    monkeypatch: pytest.MonkeyPatch, redis_server: RedisServer, redis: Redis, api: FakeApi
) -> None:
    for name, value in {
        "REDIS_URL": redis_server.url,
        "WEBHOOK_SOURCES": "inbound:hmac,stripe,github",
        "WEBHOOK_SIGNING_SECRET": SECRET,
        **api_variables(api),
    }.items():
        monkeypatch.setenv(name, value)


def api_variables(api: FakeApi) -> dict[str, str]:
    """The stripe and github sources' secrets, and the replay's APIs: the fake ones."""
    return {
        "WEBHOOK_SECRET_STRIPE": "whsec_stripe-secret-0123",
        "WEBHOOK_SECRET_GITHUB": "github-secret-0123456",
        "STRIPE_API_KEY": api.key,
        "STRIPE_API_BASE": api.url,
        "GITHUB_TOKEN": api.key,
        "GITHUB_API_BASE": api.url,
    }


def stripe_event(n: int, created: int) -> dict[str, Any]:
    return {
        "id": f"evt_{n}",
        "object": "event",
        "type": "invoice.paid",
        "created": created,
        "data": {"object": {"id": f"in_{n}"}},
    }
