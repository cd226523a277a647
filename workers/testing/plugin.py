"""What the four fixtures do. The entry point (`pytest_webhook_receiver.plugin`) declares
them and imports this module only once a test uses one and the package check has passed, so
that merely installing rq-webhook-receiver never puts its `app` in front of a user's own.

- `webhook_event(source, type=None, payload=None, *, id=, headers=, attempt=1,
  received_at=)` -> the `Event` a handler receives (`events.build_event`);
- `deliver(event)` -> the `Outcome` of running the registered handlers as the worker does
  (`delivery.deliver_event`), on a version-guard store of the test's;
- `signed_request(source, payload=None, *, type=, id=, secret=, private_key=, url=,
  timestamp=)` -> `(headers, body)` signed as the provider signs (`events.sign`);
- `receiver` -> a `ReceiverClient` of the real app on fakeredis, or on the Redis given by
  `--webhooks-redis` (flushed before each test).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from redis import Redis

from app.main import create_app
from app.settings import ConfigError, Settings
from workers.dev.keypair import DevKey
from workers.dev.keyserver import start_key_server
from workers.event import Event
from workers.registry import registry
from workers.testing.client import ReceiverClient
from workers.testing.delivery import deliver_event, fake_client, fake_server
from workers.testing.events import build_event, sign
from workers.testing.outcome import Outcome
from workers.testing.settings import FixtureSettings, Secrets, load_test_settings


class SignedParts(NamedTuple):
    """What `signed_request` returns: the headers and the exact body to send."""

    headers: dict[str, str]
    body: bytes


# The fixtures' types, for annotating tests: `def test_x(webhook_event: EventFactory)`.
class EventFactory(Protocol):
    def __call__(
        self,
        source: str,
        type: str | None = None,
        payload: Any = None,
        *,
        id: str | None = None,
        headers: Mapping[str, str] | None = None,
        attempt: int = 1,
        received_at: datetime | None = None,
    ) -> Event: ...


class Deliver(Protocol):
    def __call__(self, event: Event) -> Outcome: ...


class RequestSigner(Protocol):
    def __call__(
        self,
        source: str,
        payload: Any = None,
        *,
        type: str | None = None,
        id: str | None = None,
        secret: str | None = None,
        private_key: bytes | None = None,
        url: str | None = None,
        timestamp: int | None = None,
    ) -> SignedParts: ...


def fixture_settings(
    overrides: Mapping[str, Any], made: Secrets, stack: ExitStack
) -> FixtureSettings:
    """The test's settings (`settings.load_test_settings`), the key server its SNS and
    Plaid sources need (stopped with `stack`), and WEBHOOK_HANDLERS imported, as the
    worker imports them before it runs anything."""

    def serve(keys: Sequence[DevKey]) -> str:
        url, stop = start_key_server(keys, root=None)
        stack.callback(stop)
        return url

    setup = load_test_settings(overrides, made, serve)
    for module in setup.settings.webhook_handlers:
        try:
            importlib.import_module(module)  # once: Python keeps it, and its registrations
        except ImportError as exc:
            raise ConfigError(f"WEBHOOK_HANDLERS: cannot import {module!r}: {exc}") from exc
    return setup


def keep_registry(stack: ExitStack) -> None:
    """Handlers a test registers in its body are gone after it; those its modules register
    on import stay, as in a worker."""
    stack.callback(registry.restore, registry.snapshot())


def event_factory(setup: FixtureSettings) -> EventFactory:
    return functools.partial(build_event, setup)


def deliverer(setup: FixtureSettings) -> Deliver:
    store = fake_client(fake_server())  # one per test: versions applied in it stay in it

    def deliver(event: Event) -> Outcome:
        return deliver_event(event, setup.settings, store)

    return deliver


def signer(setup: FixtureSettings) -> RequestSigner:
    def signed_request(source: str, payload: Any = None, **options: Any) -> SignedParts:
        # The options are `RequestSigner`'s, which the fixture's users see.
        request = sign(setup, source, payload, **options)
        return SignedParts(dict(request.headers), request.body)

    return signed_request


def open_receiver(
    setup: FixtureSettings, redis_url: str | None, stack: ExitStack
) -> ReceiverClient:
    """The app and its client, started (its lifespan run) until the test ends. The worker
    runs in this process (see `client.py`), hence WEBHOOK_WORKER_MODE=simple."""
    changes: dict[str, Any] = {"webhook_worker_mode": "simple"}
    if redis_url:
        changes |= {"redis_url": redis_url, "redis_sentinels": []}
        settings = _copy(setup.settings, changes)
        sync = Redis.from_url(redis_url)
        stack.callback(sync.close)
        sync.flushdb()  # a database the tests own, as `--webhooks-redis` says
        app = create_app(settings)
    else:
        server = fake_server()
        import fakeredis

        # A fake has no replicas to wait for, and no persistence to check (a warning says so).
        settings = _copy(setup.settings, changes | {"webhook_replica_acks": 0})
        sync = fake_client(server)
        app = create_app(settings, redis=fakeredis.aioredis.FakeRedis(server=server))
    client = ReceiverClient(app, settings, sync)
    stack.enter_context(client)  # runs the lifespan, as uvicorn would
    return client


def _copy(settings: Settings, changes: dict[str, Any]) -> Settings:
    copied = settings.model_copy(update=changes)
    copied.__dict__.pop("sources", None)  # a cached property: made again from the copy
    return copied
