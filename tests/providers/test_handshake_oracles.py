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

import pytest
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


# --- The handshakes that echo, or answer with a constant: nothing keyed to replay ---------
# Each answer is shown to hold nothing but what the caller sent or a constant, and the
# answer (or the signature-shaped text it echoes) posted as a delivery's signature is 401.


def test_slacks_url_verification_answer_does_not_verify_a_delivery(
    make_client: ClientFactory, redis: Redis
) -> None:
    secret = "slack-signing-secret"
    client = make_client(webhook_sources="slack", per_source={"WEBHOOK_SECRET_SLACK": secret})
    ts = str(int(time.time()))
    guess = "v0=" + "ab" * 32
    handshake = json.dumps({"type": "url_verification", "challenge": guess}).encode()
    unsigned = {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": "v0=" + "0" * 64}
    refused = client.post("/webhooks/slack", content=handshake, headers=unsigned)
    assert refused.status_code == 401 and guess not in refused.text
    # Slack's own (signed) check: the answer is its challenge, nothing made with the secret.
    signed = {
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": slack_signature(secret, ts, handshake),
    }
    answer = client.post("/webhooks/slack", content=handshake, headers=signed)
    assert answer.json() == {"challenge": guess}
    event = b'{"type": "event_callback", "event_id": "Ev1", "event": {"type": "message"}}'
    replayed = {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": answer.json()["challenge"]}
    assert client.post("/webhooks/slack", content=event, headers=replayed).status_code == 401
    assert nothing_queued(redis)


def slack_signature(secret: str, ts: str, body: bytes) -> str:
    return "v0=" + s.hex_hmac(secret, f"v0:{ts}:".encode() + body)


def test_metas_hub_challenge_answer_does_not_verify_a_delivery(
    client_for: Callable[..., TestClient], redis: Redis
) -> None:
    client = client_for("meta", s.plain_key("k"))
    guess = "sha256=" + "ab" * 32
    query = {"hub.mode": "subscribe", "hub.challenge": guess}
    refused = client.get("/webhooks/meta", params={**query, "hub.verify_token": "guess"})
    assert refused.status_code == 403 and guess not in refused.text
    # Even with the verify token (typed in a console, weaker than the app secret), the
    # answer is the challenge itself: the app secret is never used.
    echo = client.get("/webhooks/meta", params={**query, "hub.verify_token": "verify-me-please"})
    assert echo.text == guess
    body = b'{"object": "page", "entry": [{"id": "forged"}]}'
    forged = client.post("/webhooks/meta", content=body, headers={"X-Hub-Signature-256": echo.text})
    assert forged.status_code == 401
    assert nothing_queued(redis)


def test_dropboxs_challenge_answer_does_not_verify_a_delivery(
    client_for: Callable[..., TestClient], redis: Redis
) -> None:
    client = client_for("dropbox", s.plain_key("k"))
    guess = "ab" * 32
    echo = client.get("/webhooks/dropbox", params={"challenge": guess})
    assert echo.text == guess  # the caller's text back: the app secret is never used
    body = b'{"list_folder": {"accounts": ["dbid:forged"]}}'
    forged = client.post(
        "/webhooks/dropbox", content=body, headers={"X-Dropbox-Signature": echo.text}
    )
    assert forged.status_code == 401
    assert nothing_queued(redis)


def test_twitchs_callback_verification_answer_does_not_verify_a_delivery(
    client_for: Callable[..., TestClient], redis: Redis
) -> None:
    key = s.plain_key("k")
    client = client_for("twitch", key)
    guess = "sha256=" + "ab" * 32
    template = s.sign_twitch(key, "m-1", int(time.time()), kind="webhook_callback_verification")
    stamp = template.headers["Twitch-Eventsub-Message-Timestamp"]
    handshake = json.dumps({"challenge": guess}).encode()
    unsigned = {**template.headers, "Twitch-Eventsub-Message-Signature": "sha256=" + "0" * 64}
    refused = client.post("/webhooks/twitch", content=handshake, headers=unsigned)
    assert refused.status_code == 401 and guess not in refused.text
    # Twitch's own (signed) verification: the answer is its challenge, not keyed.
    signature = "sha256=" + s.hex_hmac(key.secret, f"m-1{stamp}".encode() + handshake)
    signed = {**template.headers, "Twitch-Eventsub-Message-Signature": signature}
    answer = client.post("/webhooks/twitch", content=handshake, headers=signed)
    assert answer.text == guess
    event = s.sign_twitch(key, "m-2", int(time.time()))
    replayed = {**event.headers, "Twitch-Eventsub-Message-Signature": answer.text}
    assert client.post("/webhooks/twitch", content=event.body, headers=replayed).status_code == 401
    assert nothing_queued(redis)


def test_snss_subscription_confirmation_answer_holds_nothing_keyed(
    client_for: Callable[..., TestClient], redis: Redis
) -> None:
    # SNS is signed with AWS's private key; we hold none, so no answer of ours can sign.
    key = s.sns_key("k")
    client = client_for("sns", key)
    now = int(time.time())
    confirm = s.sign_sns(key, "c-1", now, Type="SubscriptionConfirmation", Token="tok-oracle")
    answer = client.post("/webhooks/sns", content=confirm.body, headers=confirm.headers)
    assert answer.json() == {"status": "subscribed"}
    event = json.loads(s.sign_sns(key, "n-1", now).body)
    forged = {**event, "Message": "forged", "Signature": base64.b64encode(answer.content).decode()}
    response = client.post(
        "/webhooks/sns", content=json.dumps(forged).encode(), headers=confirm.headers
    )
    assert response.status_code == 401
    assert nothing_queued(redis)


def test_xeros_intent_to_receive_answer_holds_nothing_keyed(
    client_for: Callable[..., TestClient], redis: Redis
) -> None:
    key = s.plain_key("k")
    client = client_for("xero", key)
    intent = b'{"events": [], "firstEventSequence": 0, "lastEventSequence": 0}'
    answer = client.post(
        "/webhooks/xero",
        content=intent,
        headers={"x-xero-signature": s.b64_hmac(key.secret, intent)},
    )
    assert (answer.status_code, answer.content) == (200, b"")
    body = b'{"events": [{"resourceId": "forged"}], "firstEventSequence": 1}'
    forged = client.post("/webhooks/xero", content=body, headers={"x-xero-signature": answer.text})
    assert forged.status_code == 401
    assert nothing_queued(redis)


def test_woocommerces_unsigned_ping_answer_holds_nothing_keyed(
    client_for: Callable[..., TestClient], redis: Redis
) -> None:
    client = client_for("woocommerce", s.plain_key("k"))
    ping = client.post("/webhooks/woocommerce", content=b"webhook_id=17", headers=FORM)
    assert (ping.status_code, ping.content) == (200, b"")
    headers = {"X-WC-Webhook-Signature": ping.text, "X-WC-Webhook-Topic": "order.created"}
    forged = client.post("/webhooks/woocommerce", content=b'{"id": 1}', headers=headers)
    assert forged.status_code == 401
    assert nothing_queued(redis)


def test_discords_pong_holds_nothing_keyed(
    client_for: Callable[..., TestClient], redis: Redis
) -> None:
    # Discord signs with its Ed25519 private key; we hold the public key only.
    key = s.ed25519_key("k")
    client = client_for("discord", key)
    ping = s.sign_discord(key, "i-1", int(time.time()), kind=1)
    pong = client.post("/webhooks/discord", content=ping.body, headers=ping.headers)
    assert pong.json() == {"type": 1}
    command = s.sign_discord(s.ed25519_key("attacker"), "i-2", int(time.time()))
    forged = {**command.headers, "X-Signature-Ed25519": pong.content.hex().ljust(128, "0")}
    assert client.post("/webhooks/discord", content=command.body, headers=forged).status_code == 401
    assert nothing_queued(redis)
