"""Braintree's bt_payload must be a notification: signed text that is not one (no root, no
kind, no timestamp, text after the root) is refused, so our handshake's answer, a
signature over hex of the caller's choosing, can never be a delivery's (see
`test_handshake_oracles.py`). Every notification Braintree sends is still accepted.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import braintree
import pytest
from braintree.util.crypto import Crypto
from fastapi.testclient import TestClient
from redis import Redis
from rq import Queue

from tests.providers import signing as s
from tests.providers.cases import BY_NAME

ClientFactory = Callable[..., TestClient]
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def jobs(redis: Redis) -> list[Any]:
    return Queue("webhooks", connection=redis).get_jobs()


@pytest.fixture
def client(make_client: ClientFactory) -> TestClient:
    return make_client(**BY_NAME["braintree"].config(KEY))


KEY = s.braintree_key("k")


def braintree_post(client: TestClient, signature: str, payload: str) -> Any:
    body = urlencode({"bt_signature": signature, "bt_payload": payload}).encode()
    return client.post("/webhooks/braintree", content=body, headers=FORM)


def braintree_signed(key: s.Key, xml: bytes) -> tuple[str, str]:
    """What Braintree would send for this XML, had it signed it: (bt_signature, bt_payload)."""
    config = key.material.config
    payload = base64.encodebytes(xml).decode()
    return f"{config.public_key}|{Crypto.sha1_hmac_hash(config.private_key, payload)}", payload


NOT_NOTIFICATIONS = {
    "plain text": b"hello, anything at all",
    "kind without a root": b"<kind>check</kind><timestamp>2026-01-01T00:00:00Z</timestamp>",
    "another root": (
        b'<subject><timestamp type="datetime">2026-01-01T00:00:00Z</timestamp>'
        b"<kind>check</kind></subject>"
    ),
    "no kind": b'<notification><timestamp type="datetime">2026-01-01T00:00:00Z</timestamp>'
    b"<subject/></notification>",
    "no timestamp": b"<notification><kind>check</kind><subject/></notification>",
    "an empty kind": b'<notification><timestamp type="datetime">2026-01-01T00:00:00Z'
    b"</timestamp><kind></kind></notification>",
    "unclosed root": b'<notification><timestamp type="datetime">2026-01-01T00:00:00Z'
    b"</timestamp><kind>check</kind>",
    "text after the root": b'<notification><timestamp type="datetime">2026-01-01T00:00:00Z'
    b"</timestamp><kind>check</kind></notification><kind>other</kind>",
}


@pytest.mark.parametrize("xml", NOT_NOTIFICATIONS.values(), ids=NOT_NOTIFICATIONS.keys())
def test_a_signed_braintree_payload_that_is_not_a_notification_is_refused(
    xml: bytes, client: TestClient, redis: Redis
) -> None:
    signature, payload = braintree_signed(KEY, xml)
    response = braintree_post(client, signature, payload)
    assert response.status_code == 400, response.text
    assert jobs(redis) == []


KINDS = sorted(v for k, v in vars(braintree.WebhookNotification.Kind).items() if k[0].isupper())


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_of_braintree_sdk_sample_notification_is_accepted(
    kind: str, client: TestClient, redis: Redis
) -> None:
    sample = KEY.material.webhook_testing.sample_notification(kind, "id_1")
    payload = sample["bt_payload"].decode()
    KEY.material.webhook_notification.parse(sample["bt_signature"], payload)  # the SDK agrees
    response = braintree_post(client, sample["bt_signature"], payload)
    assert response.json() == {"status": "accepted", "id": s.digest_id(payload.encode())}
    [job] = jobs(redis)
    assert job.meta["type"] == kind


BRAINTREE_SHAPES = {
    # What Braintree's servers send: an XML declaration, two-space indents, one line.
    "declaration": b'<?xml version="1.0" encoding="UTF-8"?>\n<notification>\n'
    b'  <timestamp type="datetime">2026-01-01T00:00:00Z</timestamp>\n'
    b'  <kind>check</kind>\n  <subject>\n    <check type="boolean">true</check>\n'
    b"  </subject>\n</notification>\n",
    "compact": b'<notification><timestamp type="datetime">2026-01-01T00:00:00Z</timestamp>'
    b"<kind>subscription_canceled</kind><subject/></notification>",
}


@pytest.mark.parametrize("xml", BRAINTREE_SHAPES.values(), ids=BRAINTREE_SHAPES.keys())
def test_braintree_notifications_in_every_form_it_sends_are_accepted(
    xml: bytes, client: TestClient, redis: Redis
) -> None:
    signature, payload = braintree_signed(KEY, xml)
    KEY.material.webhook_notification.parse(signature, payload)  # the SDK agrees
    response = braintree_post(client, signature, payload)
    assert response.json()["status"] == "accepted", response.text


def test_a_signed_braintree_payload_that_is_not_base64_is_400(
    client: TestClient, redis: Redis
) -> None:
    # Base64's letters, signed, but of a length no base64 has: it decodes to nothing.
    payload = base64.b64encode(BRAINTREE_SHAPES["compact"]).decode().rstrip("=")[:-2]
    config = KEY.material.config
    signature = f"{config.public_key}|{Crypto.sha1_hmac_hash(config.private_key, payload)}"
    response = braintree_post(client, signature, payload)
    assert (response.status_code, response.json()["detail"]) == (400, "bt_payload is not base64")
    assert jobs(redis) == []
