"""Requests signed the way each provider signs them, by the provider's own SDK where one exists.

The SDKs are test-only dependencies: they are the oracle the receiver must agree with.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import standardwebhooks
import stripe
import svix.webhooks
from paddle_billing.Notifications.PaddleSignature import PaddleSignature
from slack_sdk.signature import SignatureVerifier


@dataclass(frozen=True)
class Signed:
    body: bytes
    headers: dict[str, str]


def _hex(secret: str, message: bytes) -> str:
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def _b64(secret: str, message: bytes) -> str:
    return base64.b64encode(hmac.new(secret.encode(), message, hashlib.sha256).digest()).decode()


def sign_hmac(secret: str, event_id: str, event_type: str, ts: int) -> Signed:
    body = json.dumps({"id": event_id, "type": event_type, "created": ts}).encode()
    return Signed(body, {"X-Signature-256": _hex(secret, body)})


def sign_stripe(secret: str, event_id: str, event_type: str, ts: int) -> Signed:
    body = json.dumps(
        {
            "id": event_id,
            "object": "event",
            "type": event_type,
            "data": {"object": {"id": "pi_1", "amount": 500}},
        }
    ).encode()
    header = stripe.WebhookSignature.generate_signature_header(body.decode(), secret, ts)
    return Signed(body, {"Stripe-Signature": header})


def sign_github(secret: str, event_id: str, event_type: str, ts: int) -> Signed:
    # Two events differ in their bodies too (the id header is not signed, and identical
    # signed bytes are one event: `Verifier.id_signed`).
    pull = {"node_id": f"PR_{event_id}"}
    body = json.dumps(
        {"action": "opened", "pull_request": pull, "repository": {"full_name": "o/r"}}
    ).encode()
    return Signed(
        body,
        {
            "X-Hub-Signature-256": "sha256=" + _hex(secret, body),
            "X-GitHub-Delivery": event_id,
            "X-GitHub-Event": event_type,
            "X-GitHub-Hook-ID": "42",
            "Content-Type": "application/json",
        },
    )


def sign_shopify(secret: str, event_id: str, event_type: str, ts: int) -> Signed:
    order = {"id": 820982911946154508, "email": "jon@example.com", "note": event_id}
    body = json.dumps(order).encode()
    return Signed(
        body,
        {
            "X-Shopify-Hmac-Sha256": _b64(secret, body),
            "X-Shopify-Event-Id": event_id,
            "X-Shopify-Topic": event_type,
            "X-Shopify-Shop-Domain": "shop.myshopify.com",
            "X-Shopify-Webhook-Id": "b54557e4",
            "X-Shopify-Triggered-At": "2026-11-30T08:00:00Z",
        },
    )


def sign_slack(secret: str, event_id: str, event_type: str, ts: int) -> Signed:
    body = json.dumps(
        {
            "type": "event_callback",
            "event_id": event_id,
            "team_id": "T1",
            "event": {"type": event_type, "text": "hi"},
        }
    ).encode()
    signature = SignatureVerifier(secret).generate_signature(timestamp=str(ts), body=body.decode())
    return Signed(
        body,
        {
            "X-Slack-Signature": signature,
            "X-Slack-Request-Timestamp": str(ts),
            "X-Slack-Retry-Num": "1",
            "X-Slack-Retry-Reason": "http_timeout",
        },
    )


def sign_paddle(secret: str, event_id: str, event_type: str, ts: int) -> Signed:
    body = json.dumps(
        {"event_id": event_id, "event_type": event_type, "data": {"id": "sub_1"}}
    ).encode()
    digest = PaddleSignature.calculate_hmac(secret, f"{ts}:{body.decode()}".encode()).hexdigest()
    return Signed(body, {"Paddle-Signature": f"ts={ts};h1={digest}"})


def sign_standard(secret: str, event_id: str, event_type: str, ts: int) -> Signed:
    body = json.dumps(
        {"type": event_type, "timestamp": "2026-11-30T08:00:00Z", "data": {"id": 1}}
    ).encode()
    when = datetime.fromtimestamp(ts, UTC)
    signature = standardwebhooks.Webhook(secret).sign(event_id, when, body.decode())
    return Signed(
        body, {"webhook-id": event_id, "webhook-timestamp": str(ts), "webhook-signature": signature}
    )


def sign_svix(secret: str, event_id: str, event_type: str, ts: int) -> Signed:
    body = json.dumps({"type": event_type, "data": {"id": 1}}).encode()
    when = datetime.fromtimestamp(ts, UTC)
    signature = svix.webhooks.Webhook(secret).sign(event_id, when, body.decode())
    return Signed(
        body, {"svix-id": event_id, "svix-timestamp": str(ts), "svix-signature": signature}
    )


def _long(seed: str) -> str:
    """A secret of the seed, long enough for every scheme's minimum."""
    return f"{seed}-secret-0123456789"


def _standard_secret(seed: str) -> str:
    return "whsec_" + base64.b64encode(hashlib.sha256(seed.encode()).digest()).decode()


@dataclass(frozen=True)
class Case:
    name: str  # the test id
    provider: str
    sign: Callable[[str, str, str, int], Signed]
    make_secret: Callable[[str], str]
    event_type: str
    timestamped: bool  # a signed timestamp is checked
    future_refused: bool  # ...in both directions

    def signed(
        self,
        secret: str,
        event_id: str = "evt_1",
        ts: int | None = None,
        event_type: str | None = None,
    ) -> Signed:
        return self.sign(
            secret, event_id, event_type or self.event_type, int(time.time()) if ts is None else ts
        )

    def settings(self, *secrets: str, **extra: Any) -> dict[str, Any]:
        return {
            "webhook_sources": f"{self.name}:{self.provider}",
            "per_source": {f"WEBHOOK_SECRET_{self.name.upper()}": ",".join(secrets)},
            **extra,
        }


CASES = [
    Case("inbound", "hmac", sign_hmac, _long, "order.created", True, True),
    Case(
        "stripe",
        "stripe",
        sign_stripe,
        lambda s: "whsec_" + _long(s),
        "payment_intent.succeeded",
        True,
        False,
    ),
    Case("github", "github", sign_github, _long, "pull_request", False, False),
    Case(
        "shopify",
        "shopify",
        sign_shopify,
        lambda s: "shpss_" + _long(s),
        "orders/create",
        False,
        False,
    ),
    Case("slack", "slack", sign_slack, _long, "app_mention", True, True),
    Case(
        "paddle",
        "paddle",
        sign_paddle,
        lambda s: "pdl_ntfset_" + _long(s),
        "subscription.updated",
        True,
        True,
    ),
    Case("standard", "standard", sign_standard, _standard_secret, "invoice.paid", True, True),
    Case("svix", "standard", sign_svix, _standard_secret, "invoice.paid", True, True),
]
TIMESTAMPED = [c for c in CASES if c.timestamped]
