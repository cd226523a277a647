"""Where neither the id nor the type is signed (a topic header), the receiver's dedupe by
the signed bytes must not merge two events of different types: Shopify sends
`products/create` and `products/update` (WooCommerce `order.created` and
`order.updated`) for one change, often with the very same body."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from fastapi.testclient import TestClient
from redis import Redis
from rq import Queue

from tests import signers
from tests.providers import signing as s
from tests.providers.cases import BY_NAME

ClientFactory = Callable[..., TestClient]


def test_two_topics_with_one_body_are_two_events(make_client: ClientFactory, redis: Redis) -> None:
    case = next(c for c in signers.CASES if c.provider == "shopify")
    secret = case.make_secret("k1")
    client = make_client(**case.settings(secret))
    created = signers.sign_shopify(secret, "evt-1", "products/create", 0)
    updated = signers.sign_shopify(secret, "evt-1", "products/update", 0)
    assert created.body == updated.body  # one body, signed once: only the topic differs
    headers = {**updated.headers, "X-Shopify-Event-Id": "evt-2"}
    path = f"/webhooks/{case.name}"
    assert client.post(path, content=created.body, headers=created.headers).status_code == 200
    answer = client.post(path, content=updated.body, headers=headers)
    assert answer.json() == {"status": "accepted", "id": "evt-2"}
    assert sorted(j.meta["type"] for j in Queue("webhooks", connection=redis).get_jobs()) == [
        "products/create",
        "products/update",
    ]


def test_the_same_body_and_topic_under_a_fresh_id_is_still_a_duplicate(
    make_client: ClientFactory, redis: Redis
) -> None:
    case = next(c for c in signers.CASES if c.provider == "shopify")
    secret = case.make_secret("k1")
    client = make_client(**case.settings(secret))
    signed = signers.sign_shopify(secret, "evt-1", "products/create", 0)
    path = f"/webhooks/{case.name}"
    assert client.post(path, content=signed.body, headers=signed.headers).status_code == 200
    replayed = {**signed.headers, "X-Shopify-Event-Id": "evt-forged"}
    answer = client.post(path, content=signed.body, headers=replayed)
    assert answer.json() == {"status": "duplicate", "id": "evt-forged"}
    assert len(Queue("webhooks", connection=redis).get_jobs()) == 1


def test_a_captured_mailgun_signature_under_a_new_id_and_a_new_type_is_a_duplicate(
    make_client: ClientFactory, redis: Redis
) -> None:
    # Mailgun signs a timestamp and a token, not the body: there the type is the sender's
    # too, so it must not make the signed bytes a new event.
    key = s.plain_key("k1")
    client = make_client(**BY_NAME["mailgun"].config(key))
    signed = s.sign_mailgun(key, "evt-1", int(time.time()))
    forged = json.loads(signed.body)
    forged["event-data"] = {"id": "evt-forged", "event": "opened"}
    first = client.post("/webhooks/mailgun", content=signed.body, headers=signed.headers)
    again = client.post("/webhooks/mailgun", content=json.dumps(forged), headers=signed.headers)
    assert first.json()["status"] == "accepted"
    assert again.json() == {"status": "duplicate", "id": "evt-forged"}
    assert len(Queue("webhooks", connection=redis).get_jobs()) == 1
