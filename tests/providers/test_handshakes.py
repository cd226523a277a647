"""Handshakes: answered as each provider expects, only when verified where the scheme signs
them, and never enqueued."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from fastapi.testclient import TestClient
from redis import Redis
from slack_sdk.signature import SignatureVerifier

from app.settings import ConfigError
from tests.providers import fake_keys
from tests.providers import signing as s
from tests.providers.cases import BY_NAME

ClientFactory = Callable[..., TestClient]


def nothing_enqueued(redis: Redis) -> bool:
    return redis.keys("webhook:*") == [] and redis.keys("rq:job:*") == []


@pytest.fixture
def client_for(make_client: ClientFactory) -> Callable[..., TestClient]:
    def make(provider: str, key: s.Key, **extra: Any) -> TestClient:
        return make_client(**BY_NAME[provider].config(key, **extra))

    return make


def test_meta_answers_the_verify_challenge_only_with_the_right_token(
    client_for: Callable[..., TestClient], redis: Redis
) -> None:
    client = client_for("meta", s.plain_key("k"))
    query = {"hub.mode": "subscribe", "hub.challenge": "1158201444"}
    ok = client.get("/webhooks/meta", params={**query, "hub.verify_token": "verify-me-please"})
    assert (ok.status_code, ok.text) == (200, "1158201444")
    assert ok.headers["content-type"].startswith("text/plain")
    wrong = client.get("/webhooks/meta", params={**query, "hub.verify_token": "guess"})
    assert wrong.status_code == 403 and "1158201444" not in wrong.text
    other_mode = {**query, "hub.mode": "unsubscribe", "hub.verify_token": "verify-me-please"}
    assert client.get("/webhooks/meta", params=other_mode).status_code == 403
    assert nothing_enqueued(redis)


def test_meta_without_a_verify_token_stops_startup(make_client: ClientFactory) -> None:
    config = BY_NAME["meta"].config(s.plain_key("k"))
    del config["per_source"]["WEBHOOK_VERIFY_TOKEN_META"]
    with pytest.raises(ConfigError, match=r"^WEBHOOK_VERIFY_TOKEN_META is not set"):
        make_client(**config)


def test_dropbox_echoes_its_challenge_as_plain_text(
    client_for: Callable[..., TestClient], redis: Redis
) -> None:
    client = client_for("dropbox", s.plain_key("k"))
    response = client.get("/webhooks/dropbox", params={"challenge": "abc123"})
    assert (response.status_code, response.text) == (200, "abc123")
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["content-type"].startswith("text/plain")
    assert client.get("/webhooks/dropbox").status_code == 400
    assert nothing_enqueued(redis)


def test_braintree_answers_bt_challenge_as_its_sdk_does(
    client_for: Callable[..., TestClient], redis: Redis
) -> None:
    key = s.braintree_key("k")
    client = client_for("braintree", key)
    challenge = "20f9f8ed05f77439fe955c977e4c8a53"
    response = client.get("/webhooks/braintree", params={"bt_challenge": challenge})
    assert response.text == key.material.webhook_notification.verify(challenge)
    assert client.get("/webhooks/braintree", params={"bt_challenge": "<x>"}).status_code == 400
    assert nothing_enqueued(redis)


def test_a_get_to_a_source_without_a_get_handshake_is_405_and_unknown_is_404(
    client_for: Callable[..., TestClient],
) -> None:
    client = client_for("twilio", s.plain_key("k"))
    assert client.get("/webhooks/twilio").status_code == 405
    assert client.get("/webhooks/nope").status_code == 404


def test_zoom_url_validation_is_answered_with_the_encrypted_token_once_verified(
    client_for: Callable[..., TestClient], redis: Redis
) -> None:
    # Zoom's docs example: plainToken qgg8vlvZRS6UYooatFL8Aw; the expected value is the
    # hex HMAC-SHA256 of it with the secret token, computed as the docs describe.
    key = s.Key("LZHwkF0pS2KwMqdJ0Vjy_A")
    client = client_for("zoom", key)
    body = json.dumps(
        {
            "payload": {"plainToken": "qgg8vlvZRS6UYooatFL8Aw"},
            "event_ts": 1654503849680,
            "event": "endpoint.url_validation",
        }
    ).encode()
    ts = str(int(time.time()))
    headers = {
        "x-zm-request-timestamp": ts,
        "x-zm-signature": "v0=" + s.hex_hmac(key.secret, f"v0:{ts}:".encode() + body),
    }
    response = client.post("/webhooks/zoom", content=body, headers=headers)
    assert response.json() == {
        "plainToken": "qgg8vlvZRS6UYooatFL8Aw",
        "encryptedToken": "dc33174065aff6d1410be642e524496a9ad705922942c7b8f86b46cb23b665d4",
    }
    forged = {**headers, "x-zm-signature": "v0=" + "0" * 64}
    assert client.post("/webhooks/zoom", content=body, headers=forged).status_code == 401
    assert nothing_enqueued(redis)


def test_twitch_callback_verification_returns_the_challenge_as_text_once_verified(
    client_for: Callable[..., TestClient], redis: Redis
) -> None:
    key = s.plain_key("k")
    client = client_for("twitch", key)
    signed = s.sign_twitch(key, "m-1", int(time.time()), kind="webhook_callback_verification")
    body = json.dumps({"challenge": "pogchamp-kappa-360noscope-vohiyo"}).encode()
    stamp = signed.headers["Twitch-Eventsub-Message-Timestamp"]
    headers = {
        **signed.headers,
        "Twitch-Eventsub-Message-Signature": "sha256="
        + s.hex_hmac(key.secret, f"m-1{stamp}".encode() + body),
    }
    response = client.post("/webhooks/twitch", content=body, headers=headers)
    assert (response.status_code, response.text) == (200, "pogchamp-kappa-360noscope-vohiyo")
    assert response.headers["content-type"].startswith("text/plain")
    forged = {**headers, "Twitch-Eventsub-Message-Signature": "sha256=" + "0" * 64}
    assert client.post("/webhooks/twitch", content=body, headers=forged).status_code == 401
    assert nothing_enqueued(redis)


def test_xero_intent_to_receive_is_200_empty_when_signed_and_401_otherwise(
    client_for: Callable[..., TestClient], redis: Redis
) -> None:
    key = s.plain_key("k")
    client = client_for("xero", key)
    body = b'{"events":[],"firstEventSequence": 0,"lastEventSequence": 0, "entropy": "S0m3r4Nd0m"}'
    good = client.post(
        "/webhooks/xero", content=body, headers={"x-xero-signature": s.b64_hmac(key.secret, body)}
    )
    assert (good.status_code, good.content) == (200, b"")
    bad = client.post(
        "/webhooks/xero", content=body, headers={"x-xero-signature": s.b64_hmac("x", body)}
    )
    assert bad.status_code == 401
    assert nothing_enqueued(redis)


def test_woocommerce_unsigned_ping_is_200_but_no_other_unsigned_body(
    client_for: Callable[..., TestClient], redis: Redis
) -> None:
    client = client_for("woocommerce", s.plain_key("k"))
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    ping = client.post("/webhooks/woocommerce", content=b"webhook_id=17", headers=form)
    assert ping.status_code == 200
    assert (
        client.post("/webhooks/woocommerce", content=b"webhook_id=17&x=1", headers=form).status_code
        == 401
    )
    assert client.post("/webhooks/woocommerce", content=b'{"id": 1}').status_code == 401
    assert nothing_enqueued(redis)


def test_discord_ping_gets_pong_only_when_signed(
    client_for: Callable[..., TestClient], redis: Redis
) -> None:
    key = s.ed25519_key("k")
    client = client_for("discord", key)
    ping = s.sign_discord(key, "i-1", int(time.time()), kind=1)
    response = client.post("/webhooks/discord", content=ping.body, headers=ping.headers)
    assert (response.status_code, response.json()) == (200, {"type": 1})
    # Discord checks endpoints by sending bad signatures, and requires a 401 for them.
    forged = {**ping.headers, "X-Signature-Ed25519": "0" * 128}
    assert client.post("/webhooks/discord", content=ping.body, headers=forged).status_code == 401
    assert nothing_enqueued(redis)


def test_sns_subscription_confirmation_fetches_the_subscribe_url_once_verified(
    client_for: Callable[..., TestClient], redis: Redis
) -> None:
    key = s.sns_key("k")
    client = client_for("sns", key)
    confirm = s.sign_sns(
        key, "c-1", int(time.time()), Type="SubscriptionConfirmation", Token="tok-good"
    )
    response = client.post("/webhooks/sns", content=confirm.body, headers=confirm.headers)
    assert response.status_code == 200, response.text
    assert "tok-good" in fake_keys.STATE.confirmed
    forged = s.sign_sns(
        key, "c-2", int(time.time()), Type="SubscriptionConfirmation", Token="tok-forged"
    )
    tampered = replace(forged, body=forged.body.replace(b"tok-forged", b"tok-forgeD"))
    assert (
        client.post("/webhooks/sns", content=tampered.body, headers=tampered.headers).status_code
        == 401
    )
    assert not any(t.lower() == "tok-forged" for t in fake_keys.STATE.confirmed)
    assert nothing_enqueued(redis)


def test_slack_url_verification_is_answered_with_the_challenge_and_enqueues_nothing(
    client_for: Callable[..., TestClient], redis: Redis
) -> None:
    key = s.plain_key("k")
    client = client_for("slack", key)
    challenge = "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
    body = json.dumps({"token": "t", "challenge": challenge, "type": "url_verification"})
    ts = str(int(time.time()))
    headers = {
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": SignatureVerifier(key.secret).generate_signature(
            timestamp=ts, body=body
        ),
    }
    response = client.post("/webhooks/slack", content=body, headers=headers)
    assert (response.status_code, response.json()) == (200, {"challenge": challenge})
    assert nothing_enqueued(redis)
    unsigned = client.post(
        "/webhooks/slack", content=body, headers={**headers, "X-Slack-Signature": "v0=" + "0" * 64}
    )
    assert unsigned.status_code == 401
