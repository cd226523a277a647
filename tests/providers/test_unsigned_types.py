"""Where the id or the type travels unsigned (a header), the receiver dedupes by the signed
bytes too: a captured request re-sent under a fresh id is a duplicate, but two events that
differ in what is signed stay two, and so do two events of different types: Shopify sends
`products/create` and `products/update` (WooCommerce `order.created` and `order.updated`)
for one change, often with the very same body."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import replace

import pytest
from fastapi.testclient import TestClient
from redis import Redis
from rq import Queue

from tests.providers import signing as s
from tests.providers import signing_first as f
from tests.providers.cases import BY_NAME

ClientFactory = Callable[..., TestClient]


def event_ids(redis: Redis) -> list[str]:
    return [job.meta["event_id"] for job in Queue("webhooks", connection=redis).get_jobs()]


def test_two_topics_with_one_body_are_two_events(make_client: ClientFactory, redis: Redis) -> None:
    case = BY_NAME["shopify"]
    key = case.make_key("k1")
    client = make_client(**case.config(key))
    created = f.sign_shopify(key, "evt-1", 0, event_type="products/create")
    updated = f.sign_shopify(key, "evt-1", 0, event_type="products/update")
    assert created.body == updated.body  # one body, signed once: only the topic differs
    headers = {**updated.headers, "X-Shopify-Event-Id": "evt-2"}
    first = client.post("/webhooks/shopify", content=created.body, headers=created.headers)
    assert first.status_code == 200
    answer = client.post("/webhooks/shopify", content=updated.body, headers=headers)
    assert answer.json() == {"status": "accepted", "id": "evt-2"}
    assert sorted(j.meta["type"] for j in Queue("webhooks", connection=redis).get_jobs()) == [
        "products/create",
        "products/update",
    ]


def test_the_same_body_and_topic_under_a_fresh_id_is_still_a_duplicate(
    make_client: ClientFactory, redis: Redis
) -> None:
    case = BY_NAME["shopify"]
    key = case.make_key("k1")
    client = make_client(**case.config(key))
    signed = f.sign_shopify(key, "evt-1", 0, event_type="products/create")
    first = client.post("/webhooks/shopify", content=signed.body, headers=signed.headers)
    assert first.status_code == 200
    replayed = {**signed.headers, "X-Shopify-Event-Id": "evt-forged"}
    answer = client.post("/webhooks/shopify", content=signed.body, headers=replayed)
    assert answer.json() == {"status": "duplicate", "id": "evt-forged"}
    assert len(event_ids(redis)) == 1


@pytest.mark.parametrize(
    ("name", "id_header"), [("github", "X-GitHub-Delivery"), ("shopify", "X-Shopify-Event-Id")]
)
def test_a_captured_request_resent_under_a_fresh_unsigned_id_is_a_duplicate(
    name: str, id_header: str, make_client: ClientFactory, redis: Redis
) -> None:
    # The attacker's side: the signature covers the body only, so the id header is theirs
    # to change; the signed bytes are claimed too, for the source's dedupe window.
    case = BY_NAME[name]
    key = case.make_key("k1")
    client = make_client(**case.config(key))
    captured = case.signed(key, "evt-original")
    first = client.post(f"/webhooks/{name}", content=captured.body, headers=captured.headers)
    assert first.json()["status"] == "accepted"
    for fresh in ("evt-forged-1", "evt-forged-2"):
        headers = {**captured.headers, id_header: fresh}
        response = client.post(f"/webhooks/{name}", content=captured.body, headers=headers)
        assert (response.status_code, response.json()["status"]) == (200, "duplicate")
    assert event_ids(redis) == ["evt-original"]


def test_a_different_body_under_an_unsigned_id_is_still_its_own_event(
    make_client: ClientFactory, redis: Redis
) -> None:
    case = BY_NAME["github"]
    key = case.make_key("k1")
    client = make_client(**case.config(key))
    first = case.signed(key, "evt-1")
    body = first.body.replace(b"opened", b"closed")
    headers = {
        **first.headers,
        "X-GitHub-Delivery": "evt-2",
        "X-Hub-Signature-256": "sha256=" + s.hex_hmac(key.secret, body),
    }
    other = replace(first, body=body, headers=headers)
    for request in (first, other):
        response = client.post("/webhooks/github", content=request.body, headers=request.headers)
        assert response.json()["status"] == "accepted"
    assert sorted(event_ids(redis)) == ["evt-1", "evt-2"]


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
    assert len(event_ids(redis)) == 1
