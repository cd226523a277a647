"""Forms a provider's SDK accepts that the receiver must accept too, and forms it refuses
with a hint rather than a bare 401."""

from __future__ import annotations

import base64
from collections.abc import Callable
from datetime import UTC, datetime

import standardwebhooks
from fastapi.testclient import TestClient
from redis import Redis

from tests.providers.cases import BY_NAME
from tests.providers.signing import Key

ClientFactory = Callable[..., TestClient]


def test_an_unpadded_standard_webhooks_secret_is_accepted_as_the_official_library_accepts_it(
    make_client: ClientFactory, redis: Redis
) -> None:
    secret = "whsec_" + base64.b64encode(b"k" * 25).decode().rstrip("=")  # 25 bytes: padded
    assert not secret.endswith("=")
    client = make_client(**BY_NAME["standard"].config(Key(secret)))
    body = b'{"type": "user.created", "data": {}}'
    stamp = datetime.now(UTC)
    signature = standardwebhooks.Webhook(secret).sign("msg_unpadded", stamp, body.decode())
    headers = {
        "webhook-id": "msg_unpadded",
        "webhook-timestamp": str(int(stamp.timestamp())),
        "webhook-signature": signature,
    }
    response = client.post("/webhooks/standard", content=body, headers=headers)
    assert response.json() == {"status": "accepted", "id": "msg_unpadded"}


def test_github_form_encoded_payloads_are_refused_with_a_hint(
    make_client: ClientFactory, redis: Redis
) -> None:
    case = BY_NAME["github"]
    key = case.make_key("k1")
    signed = case.signed(key)
    headers = {**signed.headers, "Content-Type": "application/x-www-form-urlencoded"}
    response = make_client(**case.config(key)).post(
        "/webhooks/github", content=signed.body, headers=headers
    )
    assert response.status_code == 400 and "application/json" in response.json()["detail"]
