"""Signed handshakes that lack what they must carry, from the attacker's side.

A handshake is answered only once verified, and then only from what it carries: a
challenge or a plainToken that is missing, empty, not text or too long is a 400 naming
what is wrong, with no answer computed and nothing queued. So is an SNS subscription
whose SubscribeURL refuses the confirmation.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from redis import Redis
from slack_sdk.signature import SignatureVerifier

from tests.providers import fake_keys
from tests.providers import signing as s
from tests.providers.cases import BY_NAME

ClientFactory = Callable[..., TestClient]
KEY = s.plain_key("k")


def nothing_queued(redis: Redis) -> bool:
    return redis.keys("rq:job:*") == [] and redis.keys("webhook:*") == []


def slack_headers(body: bytes, ts: int) -> dict[str, str]:
    signature = SignatureVerifier(KEY.secret).generate_signature(
        timestamp=str(ts), body=body.decode()
    )
    return {"X-Slack-Request-Timestamp": str(ts), "X-Slack-Signature": signature}


def zoom_headers(body: bytes, ts: int) -> dict[str, str]:
    signature = "v0=" + s.hex_hmac(KEY.secret, f"v0:{ts}:".encode() + body)
    return {"x-zm-request-timestamp": str(ts), "x-zm-signature": signature}


def twitch_headers(body: bytes, ts: int) -> dict[str, str]:
    headers = s.sign_twitch(KEY, "m-1", ts, kind="webhook_callback_verification").headers
    stamp = headers["Twitch-Eventsub-Message-Timestamp"]
    signature = "sha256=" + s.hex_hmac(KEY.secret, f"m-1{stamp}".encode() + body)
    return {**headers, "Twitch-Eventsub-Message-Signature": signature}


SIGNERS: dict[str, Callable[[bytes, int], dict[str, str]]] = {
    "slack": slack_headers,
    "zoom": zoom_headers,
    "twitch": twitch_headers,
}
ZOOM = "endpoint.url_validation"
MALFORMED: list[tuple[str, dict[str, Any], str]] = [
    ("slack", {"type": "url_verification"}, "url_verification without a challenge"),
    ("slack", {"type": "url_verification", "challenge": 7}, "url_verification without a"),
    ("zoom", {"event": ZOOM, "payload": {}}, "url_validation without a plainToken"),
    ("zoom", {"event": ZOOM, "payload": {"plainToken": ""}}, "without a plainToken"),
    ("zoom", {"event": ZOOM, "payload": {"plainToken": ["t"]}}, "without a plainToken"),
    ("zoom", {"event": ZOOM, "payload": {"plainToken": "t" * 257}}, "without a plainToken"),
    ("twitch", {"subscription": {}}, "webhook_callback_verification without a challenge"),
    ("twitch", {"challenge": ""}, "webhook_callback_verification without a challenge"),
    ("twitch", {"challenge": {"a": 1}}, "webhook_callback_verification without a challenge"),
]


@pytest.mark.parametrize(
    ("provider", "payload", "reason"),
    MALFORMED,
    ids=[f"{p}-{i}" for i, (p, _, _) in enumerate(MALFORMED)],
)
def test_a_signed_handshake_without_its_challenge_is_400_and_answers_nothing(
    provider: str,
    payload: dict[str, Any],
    reason: str,
    make_client: ClientFactory,
    redis: Redis,
) -> None:
    client = make_client(**BY_NAME[provider].config(KEY))
    body = json.dumps(payload).encode()
    headers = SIGNERS[provider](body, int(time.time()))
    response = client.post(f"/webhooks/{provider}", content=body, headers=headers)
    assert response.status_code == 400, response.text
    assert reason in response.json()["detail"]
    assert nothing_queued(redis)


@pytest.mark.parametrize(
    "subscribe_url",
    [
        pytest.param("{local}/sns/no-such-subscription", id="answered-404"),
        pytest.param("https://sns.evil.example/confirm?Token=t", id="off-the-allow-list"),
    ],
)
def test_an_sns_subscription_whose_subscribe_url_refuses_is_400_and_not_confirmed(
    subscribe_url: str, make_client: ClientFactory, redis: Redis
) -> None:
    key = s.sns_key("k")
    client = make_client(**BY_NAME["sns"].config(key))
    confirm = s.sign_sns(
        key,
        "c-refused",
        int(time.time()),
        Type="SubscriptionConfirmation",
        Token="tok-refused",
        SubscribeURL=subscribe_url.format(local=fake_keys.url()),
    )
    response = client.post("/webhooks/sns", content=confirm.body, headers=confirm.headers)
    assert response.status_code == 400, response.text
    assert response.json()["detail"] == "SubscribeURL refused the confirmation"
    assert "tok-refused" not in fake_keys.STATE.confirmed
    assert nothing_queued(redis)
