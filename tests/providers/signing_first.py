"""Requests signed as the first providers sign them: our own `hmac`, Stripe, GitHub,
Shopify, Slack, Paddle and Standard Webhooks (and Svix, which signs as Standard Webhooks).

As in `signing`: the provider's SDK signs where PyPI has one (Stripe, Slack, Paddle,
standardwebhooks, svix); GitHub, Shopify and `hmac` publish no SDK, so their HMAC is built
here from their documentation (GitHub's published example is in `test_vectors.py`). Bodies
go through `signing.dumps`, as every signer's do, so the fuzz tests can change their values
before they are signed.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import standardwebhooks
import stripe
import svix.webhooks
from paddle_billing.Notifications.PaddleSignature import PaddleSignature
from slack_sdk.signature import SignatureVerifier

from tests.providers import signing
from tests.providers.signing import Key, Request


def prefixed_key(prefix: str) -> Callable[[str], Key]:
    """Keys as the provider issues them: `whsec_...` (Stripe), `shpss_...` (Shopify)..."""

    def make(seed: str) -> Key:
        return Key(prefix + signing.plain_key(seed).secret)

    return make


def sign_hmac(key: Key, event_id: str, ts: int) -> Request:
    body = signing.dumps({"id": event_id, "type": "order.created", "created": ts})
    return Request(body, {"X-Signature-256": signing.hex_hmac(key.secret, body)}, event_id)


def sign_stripe(key: Key, event_id: str, ts: int) -> Request:
    payload = {
        "id": event_id,
        "object": "event",
        "type": "payment_intent.succeeded",
        "data": {"object": {"id": "pi_1", "amount": 500}},
    }
    body = signing.dumps(payload)
    header = stripe.WebhookSignature.generate_signature_header(body.decode(), key.secret, ts)
    return Request(body, {"Stripe-Signature": header}, event_id)


def sign_github(key: Key, event_id: str, ts: int) -> Request:
    # Two events differ in their bodies too (the id header is not signed, and identical
    # signed bytes are one event: `Verifier.id_signed`).
    pull = {"node_id": f"PR_{event_id}"}
    body = signing.dumps(
        {"action": "opened", "pull_request": pull, "repository": {"full_name": "o/r"}}
    )
    headers = {
        "X-Hub-Signature-256": "sha256=" + signing.hex_hmac(key.secret, body),
        "X-GitHub-Delivery": event_id,
        "X-GitHub-Event": "pull_request",
        "X-GitHub-Hook-ID": "42",
        "Content-Type": "application/json",
    }
    return Request(body, headers, event_id)


def sign_shopify(key: Key, event_id: str, ts: int, event_type: str = "orders/create") -> Request:
    body = signing.dumps({"id": 820982911946154508, "email": "jon@example.com", "note": event_id})
    headers = {
        "X-Shopify-Hmac-Sha256": signing.b64_hmac(key.secret, body),
        "X-Shopify-Event-Id": event_id,
        "X-Shopify-Topic": event_type,
        "X-Shopify-Shop-Domain": "shop.myshopify.com",
        "X-Shopify-Webhook-Id": "b54557e4",
        "X-Shopify-Triggered-At": "2026-11-30T08:00:00Z",
    }
    return Request(body, headers, event_id)


def sign_slack(key: Key, event_id: str, ts: int) -> Request:
    body = signing.dumps(
        {
            "type": "event_callback",
            "event_id": event_id,
            "team_id": "T1",
            "event": {"type": "app_mention", "text": "hi"},
        }
    )
    verifier = SignatureVerifier(key.secret)
    headers = {
        "X-Slack-Signature": verifier.generate_signature(timestamp=str(ts), body=body.decode()),
        "X-Slack-Request-Timestamp": str(ts),
        "X-Slack-Retry-Num": "1",
        "X-Slack-Retry-Reason": "http_timeout",
    }
    return Request(body, headers, event_id)


def sign_paddle(key: Key, event_id: str, ts: int) -> Request:
    body = signing.dumps(
        {"event_id": event_id, "event_type": "subscription.updated", "data": {"id": "sub_1"}}
    )
    signed = f"{ts}:{body.decode()}".encode()
    digest = PaddleSignature.calculate_hmac(key.secret, signed).hexdigest()
    return Request(body, {"Paddle-Signature": f"ts={ts};h1={digest}"}, event_id)


def sign_standard(key: Key, event_id: str, ts: int) -> Request:
    body = signing.dumps(
        {"type": "invoice.paid", "timestamp": "2026-11-30T08:00:00Z", "data": {"id": 1}}
    )
    when = datetime.fromtimestamp(ts, UTC)
    signature = standardwebhooks.Webhook(key.secret).sign(event_id, when, body.decode())
    headers = {"webhook-id": event_id, "webhook-timestamp": str(ts), "webhook-signature": signature}
    return Request(body, headers, event_id)


def sign_svix_as_standard(key: Key, event_id: str, ts: int) -> Request:
    """Svix's own SDK and header names (`svix-*`), at a Standard Webhooks source."""
    body = signing.dumps({"type": "invoice.paid", "data": {"id": 1}})
    when = datetime.fromtimestamp(ts, UTC)
    signature = svix.webhooks.Webhook(key.secret).sign(event_id, when, body.decode())
    headers = {"svix-id": event_id, "svix-timestamp": str(ts), "svix-signature": signature}
    return Request(body, headers, event_id)
