"""What reaches a handler: the provider's delivery headers but never its signature, and
each event type at the handler registered for it, through a real worker."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from redis import Redis
from rq import Queue

from tests.providers.cases import BY_NAME
from workers import Event, handler
from workers.signing import SIGNERS, EventToSign, Keys

ClientFactory = Callable[..., TestClient]


@pytest.mark.parametrize(
    ("name", "expected", "absent"),
    [
        (
            "github",
            {
                "x-github-delivery": "evt_1",
                "x-github-event": "pull_request",
                "x-github-hook-id": "42",
            },
            "x-hub-signature-256",
        ),
        (
            "shopify",
            {
                "x-shopify-topic": "orders/create",
                "x-shopify-event-id": "evt_1",
                "x-shopify-shop-domain": "shop.myshopify.com",
            },
            "x-shopify-hmac-sha256",
        ),
        (
            "slack",
            {"x-slack-retry-num": "1", "x-slack-retry-reason": "http_timeout"},
            "x-slack-signature",
        ),
        ("standard", {"webhook-id": "evt_1"}, "webhook-signature"),
    ],
)
def test_handlers_get_the_provider_headers_but_never_the_signature(
    name: str,
    expected: dict[str, str],
    absent: str,
    make_client: ClientFactory,
    redis: Redis,
) -> None:
    case = BY_NAME[name]
    key = case.make_key("k1")
    signed = case.signed(key)
    response = make_client(**case.config(key)).post(
        f"/webhooks/{name}", content=signed.body, headers=signed.headers
    )
    assert response.status_code == 200, response.text
    [job] = Queue("webhooks", connection=redis).get_jobs()
    headers = job.args[4]
    assert expected.items() <= headers.items() and absent not in headers


def test_each_provider_event_type_reaches_its_handler_through_the_worker(
    make_settings: Callable[..., Any],
    make_client: ClientFactory,
    redis: Redis,
    run_worker: Callable[..., Any],
) -> None:
    # Routing, not verifying: the project's own signers (`webhooks send`'s) sign here.
    cases = [BY_NAME[name] for name in ("github", "shopify", "slack", "stripe")]
    keys = {c.name: c.make_key("k") for c in cases}
    per_source: dict[str, str] = {}
    for c in cases:
        per_source.update(c.config(keys[c.name])["per_source"])
    settings = make_settings(webhook_sources=",".join(c.name for c in cases), per_source=per_source)
    url = settings.redis_url

    def hit(event: Event) -> None:
        Redis.from_url(url).rpush("hits", f"{event.source}/{event.type}/{event.id}")

    for c in cases:
        handler(c.name, c.event_type)(hit)
        handler(c.name, "never.sent")(lambda e: Redis.from_url(url).rpush("hits", "wrong"))
    client = make_client(settings)
    for c in cases:
        for event_id, event_type in ((f"id-{c.name}", c.event_type), (f"other-{c.name}", "other")):
            event = EventToSign(event_id, event_type, f"http://testserver/webhooks/{c.name}")
            request = SIGNERS[c.provider](
                settings.sources[c.name], event, Keys(keys[c.name].secret)
            )
            response = client.post(request.url, content=request.body, headers=request.headers)
            assert response.status_code == 200, response.text
    run_worker(settings)
    assert sorted(x.decode() for x in redis.lrange("hits", 0, -1)) == sorted(
        f"{c.name}/{c.event_type}/id-{c.name}" for c in cases
    )
