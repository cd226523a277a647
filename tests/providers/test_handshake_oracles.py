"""Handshakes as signing oracles, from the attacker's side.

A handshake answers whoever calls the source's URL. Where the answer is computed with our
secret over text the caller chose, it must never be a signature that a delivery would
accept: each test does the handshake as an attacker can, takes the answer, and posts it
as a delivery's signature. Refused (401 or 400), and nothing queued, every time.
"""

from __future__ import annotations

import base64
import json
import re
import time
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


def nothing_queued(redis: Redis) -> bool:
    return jobs(redis) == [] and redis.keys("rq:job:*") == [] and redis.keys("webhook:seen:*") == []


@pytest.fixture
def client_for(make_client: ClientFactory) -> Callable[..., TestClient]:
    def make(provider: str, key: s.Key, **extra: Any) -> TestClient:
        return make_client(**BY_NAME[provider].config(key, **extra))

    return make


# --- Braintree: GET ?bt_challenge= is HMAC-SHA1 with the webhook key over the caller's hex --


def braintree_post(client: TestClient, signature: str, payload: str) -> Any:
    body = urlencode({"bt_signature": signature, "bt_payload": payload}).encode()
    return client.post("/webhooks/braintree", content=body, headers=FORM)


def braintree_signed(key: s.Key, xml: bytes) -> tuple[str, str]:
    """What Braintree would send for this XML, had it signed it: (bt_signature, bt_payload)."""
    config = key.material.config
    payload = base64.encodebytes(xml).decode()
    return f"{config.public_key}|{Crypto.sha1_hmac_hash(config.private_key, payload)}", payload


# Hex challenges of every length that base64 decodes (a multiple of 4), both ends of the
# SDK's range, and one that decodes to bytes which look like nothing.
CHALLENGES = ["a" * 20, "0123456789abcdef01234567", "20f9f8ed05f77439fe955c977e4c8a53", "f" * 28]


@pytest.mark.parametrize("challenge", CHALLENGES)
def test_a_braintree_challenge_answer_posted_as_a_delivery_is_refused(
    challenge: str, client_for: Callable[..., TestClient], redis: Redis
) -> None:
    client = client_for("braintree", s.braintree_key("k"))
    answer = client.get("/webhooks/braintree", params={"bt_challenge": challenge})
    assert answer.status_code == 200
    forged = braintree_post(client, answer.text, challenge)
    assert forged.status_code in (400, 401), forged.text
    assert nothing_queued(redis)


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
    xml: bytes, client_for: Callable[..., TestClient], redis: Redis
) -> None:
    key = s.braintree_key("k")
    signature, payload = braintree_signed(key, xml)
    response = braintree_post(client_for("braintree", key), signature, payload)
    assert response.status_code == 400, response.text
    assert nothing_queued(redis)


KINDS = sorted(v for k, v in vars(braintree.WebhookNotification.Kind).items() if k[0].isupper())


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_of_braintree_sdk_sample_notification_is_accepted(
    kind: str, client_for: Callable[..., TestClient], redis: Redis
) -> None:
    key = s.braintree_key("k")
    sample = key.material.webhook_testing.sample_notification(kind, "id_1")
    payload = sample["bt_payload"].decode()
    key.material.webhook_notification.parse(sample["bt_signature"], payload)  # the SDK agrees
    response = braintree_post(client_for("braintree", key), sample["bt_signature"], payload)
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
    xml: bytes, client_for: Callable[..., TestClient], redis: Redis
) -> None:
    key = s.braintree_key("k")
    signature, payload = braintree_signed(key, xml)
    key.material.webhook_notification.parse(signature, payload)  # the SDK agrees
    response = braintree_post(client_for("braintree", key), signature, payload)
    assert response.json()["status"] == "accepted", response.text


# --- Zoom: encryptedToken is HMAC-SHA256 with the Secret Token over payload.plainToken -----
# A delivery's signature is the same HMAC over `v0:{ts}:{body}`: a plainToken spelt like
# that would make the answer a delivery's signature.


def zoom_headers(key: s.Key, body: bytes, ts: int) -> dict[str, str]:
    signature = "v0=" + s.hex_hmac(key.secret, f"v0:{ts}:".encode() + body)
    return {"x-zm-request-timestamp": str(ts), "x-zm-signature": signature}


def zoom_validation(plain_token: str) -> bytes:
    payload = {"payload": {"plainToken": plain_token}, "event": "endpoint.url_validation"}
    return json.dumps(payload).encode()


ZOOM_FORGED = b'{"event": "meeting.deleted", "payload": {"object": {"id": "forged"}}}'


def hex_tokens(response: Any) -> list[str]:
    """Every 64-hex-digit string the answer holds: what could pass for a signature."""
    return re.findall(r"[0-9a-f]{64}", response.text)


def test_an_unsigned_zoom_url_validation_gets_no_encrypted_token(
    client_for: Callable[..., TestClient], redis: Redis
) -> None:
    client = client_for("zoom", s.plain_key("k"))
    ts = int(time.time())
    body = zoom_validation(f"v0:{ts}:" + ZOOM_FORGED.decode())
    headers = {"x-zm-request-timestamp": str(ts), "x-zm-signature": "v0=" + "0" * 64}
    answer = client.post("/webhooks/zoom", content=body, headers=headers)
    assert answer.status_code == 401
    assert hex_tokens(answer) == []
    assert nothing_queued(redis)


def test_a_zoom_plain_token_spelt_as_a_delivery_never_yields_its_signature(
    client_for: Callable[..., TestClient], redis: Redis
) -> None:
    # Even a url_validation that verifies (a replay of one, or Zoom itself, picking the
    # token): its answer must not sign `v0:{ts}:{body}` for a body of the token's choosing.
    key = s.plain_key("k")
    client = client_for("zoom", key)
    ts = int(time.time())
    body = zoom_validation(f"v0:{ts}:" + ZOOM_FORGED.decode())
    answer = client.post("/webhooks/zoom", content=body, headers=zoom_headers(key, body, ts))
    assert answer.status_code in (200, 400)
    for token in hex_tokens(answer):
        forged = {"x-zm-request-timestamp": str(ts), "x-zm-signature": f"v0={token}"}
        response = client.post("/webhooks/zoom", content=ZOOM_FORGED, headers=forged)
        assert response.status_code == 401, response.text
    assert nothing_queued(redis)


def test_zooms_own_plain_token_is_still_answered(
    client_for: Callable[..., TestClient], redis: Redis
) -> None:
    key = s.plain_key("k")
    ts = int(time.time())
    body = zoom_validation("qgg8vlvZRS6UYooatFL8Aw")
    answer = client_for("zoom", key).post(
        "/webhooks/zoom", content=body, headers=zoom_headers(key, body, ts)
    )
    expected = s.hex_hmac(key.secret, b"qgg8vlvZRS6UYooatFL8Aw")
    assert answer.json() == {"plainToken": "qgg8vlvZRS6UYooatFL8Aw", "encryptedToken": expected}
    assert nothing_queued(redis)
