"""Requests signed as each provider signs them, and the `Event` a handler receives from one.

The request comes from the provider's signer (`workers/signing/`, the one `webhooks send`
uses): its envelope, its delivery headers, its signature. The `Event` is then made the way
the receiver and the worker make it, by the same code: the source's verifier checks the
request and says which headers it keeps, what the event id and type are and how the body
parses (`app/providers/`); `intake.new_job` makes the job's call and meta, and the
worker's `event_of` the `Event`. So a test's event cannot differ from a delivered one.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Coroutine, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime
from typing import Any, TypeVar
from urllib.parse import urlsplit

from starlette.datastructures import Headers

from app.errors import WebhookError
from app.event_job import new_job
from app.keyfetch import KeyFetcher
from app.providers import Delivery, Inbound, verifier_for
from app.settings import Settings, SourceConfig
from workers.dev.keypair import signing_pem
from workers.event import Event
from workers.runtime.job_event import event_of
from workers.signing import PRIVATE_KEY_PROVIDERS, EventToSign, Keys, SignedRequest
from workers.signing import sign as sign_event
from workers.signing.defaults import DEFAULT_TYPE
from workers.testing.settings import FixtureSettings

# Where Starlette's TestClient sends requests, so what `receiver` verifies is what was signed.
TEST_BASE_URL = "http://testserver"
T = TypeVar("T")


class WebhookTestError(Exception):
    """The event or request cannot be made as asked; the message says why."""


def source_of(settings: Settings, name: str) -> SourceConfig:
    found = settings.sources.get(name)
    if found is None:
        known = ", ".join(settings.sources)
        raise WebhookTestError(
            f"unknown source {name!r}; configured: {known} (set WEBHOOK_SOURCES, or "
            f'mark the test @pytest.mark.webhooks_settings(WEBHOOK_SOURCES="...{name}"))'
        )
    return found


def endpoint(settings: Settings, source: str) -> str:
    """The URL a provider calls for `source`: what the URL-signing schemes sign."""
    return f"{settings.webhook_public_url or TEST_BASE_URL}/webhooks/{source}"


def sign(
    setup: FixtureSettings,
    source: str,
    payload: Any = None,
    *,
    type: str | None = None,
    id: str | None = None,
    secret: str | None = None,
    private_key: bytes | None = None,
    url: str | None = None,
    timestamp: int | None = None,
) -> SignedRequest:
    """`source`'s provider's request for one event. `payload` is what `webhooks send
    --data` takes: the provider's event object (Stripe's `data.object`, the whole body for
    `hmac`); None keeps the provider's sample. Where the payload holds the provider's
    event id (hmac's `id`...), that id is the event's, and `id` must be the same or None.
    Signed with the source's secret (the first of a rotation list) or `secret`;
    asymmetric sources with their throwaway key or `private_key` (PEM): the other is
    refused, as it would sign nothing."""
    config = source_of(setup.settings, source)
    if secret is not None and config.provider in PRIVATE_KEY_PROVIDERS:
        raise WebhookTestError(
            f"secret= cannot apply to source {source!r}: {config.provider} signs with a "
            "private key (private_key=, PEM), not a secret"
        )
    if private_key is not None and config.provider not in PRIVATE_KEY_PROVIDERS:
        raise WebhookTestError(
            f"private_key= cannot apply to source {source!r}: {config.provider} signs with "
            "a secret (secret=), not a private key"
        )
    event = EventToSign(
        event_id=id or f"evt_test_{secrets.token_hex(6)}",
        event_type=type or DEFAULT_TYPE[config.provider],
        url=url or endpoint(setup.settings, source),
        data=payload,
        timestamp=int(time.time()) if timestamp is None else timestamp,
        id_given=bool(id),
        type_given=bool(type),
    )
    if secret is None:
        secret = config.secrets[0].get_secret_value() if config.secrets else ""
    own = setup.keys.get(source)
    if private_key is None:
        private_key = signing_pem(own, setup.key_server) if own is not None else b""
    return sign_event(config, event, Keys(secret, private_key))


def build_event(
    setup: FixtureSettings,
    source: str,
    type: str | None = None,
    payload: Any = None,
    *,
    id: str | None = None,
    headers: Mapping[str, str] | None = None,
    attempt: int = 1,
    received_at: datetime | None = None,
) -> Event:
    """The `Event` a handler receives for this event of `source`: see the module's docstring.
    `headers` are sent with the request (replacing the signer's of the same name); each
    must be one the verifier hands to handlers. `event.id` is the receiver's id, which for
    some providers is a digest of the body, not `id`."""
    if attempt < 1:
        raise WebhookTestError("attempt is 1-based: the first delivery is attempt 1")
    config = source_of(setup.settings, source)
    request = sign(setup, source, payload, type=type, id=id)
    given = dict(headers or {})
    if given:
        lowered = {name.lower() for name in given}
        kept = {k: v for k, v in request.headers.items() if k.lower() not in lowered}
        request = replace(request, headers={**kept, **given})
    try:
        delivery = verify(setup.settings, config, request)
    except WebhookTestError as exc:
        if not given:
            raise
        raise WebhookTestError(f"{exc}; is a header of headers= one it signs?") from None
    if delivery.reply is not None or not delivery.event_id:
        raise WebhookTestError(
            f"a {config.provider} {type or DEFAULT_TYPE[config.provider]!r} request is a "
            "handshake, answered by the receiver and never given to a handler"
        )
    item = delivery.batch[0] if delivery.batch else delivery
    stamp = received_at.timestamp() if received_at is not None else time.time()
    job = new_job(setup.settings, config, item, item.raw or request.body, stamp)
    job.meta.attempts = attempt  # counted by the worker as each attempt starts
    event = event_of(job.call, job.meta)
    dropped = sorted(name for name in given if name.lower() not in event.headers)
    if dropped:
        raise WebhookTestError(
            f"{config.provider}'s verifier hands no {', '.join(dropped)} header to handlers "
            f"(it keeps: {', '.join(sorted(event.headers)) or 'none'}): a handler never sees it"
        )
    return event


def verify(settings: Settings, source: SourceConfig, request: SignedRequest) -> Delivery:
    """The source's verifier's answer to the request, as the receiver would get it."""
    verifier = verifier_for(source, KeyFetcher.from_settings(settings))
    inbound = Inbound(
        request.method,
        request.url if verifier.signs_url else "",
        urlsplit(request.url).query,
        Headers(headers=request.headers),
        request.body,
        time.time(),
    )
    try:
        if verifier.fetches_keys:
            return _run(verifier.check_async(inbound))
        return verifier.check(inbound)
    except WebhookError as exc:
        raise WebhookTestError(
            f"{source.provider}'s verifier refused the request ({exc.status_code}: {exc})"
        ) from None


def _run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to its end from synchronous code, inside an async test too."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with ThreadPoolExecutor(1) as pool:  # a running loop cannot run another to its end
        return pool.submit(asyncio.run, coroutine).result()
