"""One `Case` per provider: how to make its key, sign a request, and break one. Every
per-behaviour test of `tests/providers/` iterates this one table.

The source of each case is named after its provider and served at /webhooks/<provider>,
but for `inbound` (an `hmac` source) and `svix` (a Standard Webhooks source sent Svix's
headers), named apart. `oracle` says what the signed requests were checked against.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from app.sources import COMMA_SECRETS
from tests.providers import fake_keys
from tests.providers import signing as s
from tests.providers import signing_first as f
from tests.providers.signing import Key, Request

FETCH_ALLOW_LOCAL = "http://127.0.0.1:*"


def flip_last_letter(request: Request) -> Request:
    """One byte of the body changed: the case of its last ASCII letter."""
    body = bytearray(request.body)
    for i in range(len(body) - 1, -1, -1):
        if chr(body[i]).isalpha() and body[i] < 128:
            body[i] ^= 0x20
            return replace(request, body=bytes(body))
    raise AssertionError("no letter to change")


def replace_once(old: bytes, new: bytes) -> Callable[[Request], Request]:
    def tamper(request: Request) -> Request:
        assert old in request.body
        return replace(request, body=request.body.replace(old, new, 1))

    return tamper


def change_header(name: str) -> Callable[[Request], Request]:
    def tamper(request: Request) -> Request:
        value = request.headers[name]
        changed = value[:-1] + ("B" if value[-1] != "B" else "C")
        return replace(request, headers={**request.headers, name: changed})

    return tamper


def change_mailgun_token(request: Request) -> Request:
    token = re.search(rb'"token": "([0-9a-f])', request.body)
    assert token is not None
    flipped = b"0" if token.group(1) != b"0" else b"1"
    return replace(
        request,
        body=request.body.replace(b'"token": "' + token.group(1), b'"token": "' + flipped, 1),
    )


@dataclass(frozen=True)
class Case:
    provider: str
    make_key: Callable[[str], Key]
    sign: Callable[[Key, str, int], Request]
    event_type: str
    oracle: str
    timestamped: bool = False  # a signed timestamp is checked (stale -> 400)
    future_refused: bool = True  # ...and one far ahead too (Stripe's SDK allows it)
    own_window: bool = False  # its documented window beats the default REPLAY_TOLERANCE
    tamper: Callable[[Request], Request] = flip_last_letter
    ack: bytes | None = None  # the answer instead of our JSON
    variables: Callable[[Key], dict[str, str]] = lambda key: {}
    settings: dict[str, Any] = field(default_factory=dict)
    malformed: tuple[dict[str, str], ...] = ()
    source: str = ""  # the source's name, when not the provider's

    @property
    def name(self) -> str:
        return self.source or self.provider

    def signed(self, key: Key, event_id: str = "evt_1", ts: int | None = None) -> Request:
        return self.sign(key, event_id, int(time.time()) if ts is None else ts)

    def config(self, *keys: Key, **extra: Any) -> dict[str, Any]:
        name = self.name.upper()
        per_source = {f"WEBHOOK_{k}_{name}": v for k, v in self._variables(keys).items()}
        if keys[0].secret:
            secrets = [k.secret for k in keys]
            per_source[f"WEBHOOK_SECRET_{name}"] = (
                json.dumps(secrets) if self.provider in COMMA_SECRETS else ",".join(secrets)
            )
        per_source.update(extra.pop("per_source", {}))
        return {
            "webhook_sources": f"{self.source}:{self.provider}" if self.source else self.provider,
            "per_source": per_source,
            **self.settings,
            **extra,
        }

    def _variables(self, keys: tuple[Key, ...]) -> dict[str, str]:
        merged: dict[str, list[str]] = {}
        for key in keys:
            for name, value in self.variables(key).items():
                merged.setdefault(name, []).append(value)
        return {name: ",".join(dict.fromkeys(values)) for name, values in merged.items()}


HEX64 = "a" * 64
# The first providers the receiver supported. Bodies and malformed headers are as their
# tests had them before the table was one.
FIRST = [
    Case(
        "hmac",
        s.plain_key,
        f.sign_hmac,
        "order.created",
        "HMAC-SHA256 of the body, as documented (our own scheme)",
        timestamped=True,
        source="inbound",
    ),
    Case(
        "stripe",
        f.prefixed_key("whsec_"),
        f.sign_stripe,
        "payment_intent.succeeded",
        "stripe WebhookSignature signs",
        timestamped=True,
        future_refused=False,
        malformed=tuple(
            {"Stripe-Signature": v}
            for v in (
                "",
                "garbage",
                "t=abc,v1=" + HEX64,
                "v1=" + HEX64,
                "t=1,v1=zz",
                "t=1",
                "t=1,,v1=ab",
                "t=1,t=2,v1=" + HEX64,
                "t=,v1=",
                "t=1e9,v1=" + HEX64,
            )
        ),
    ),
    Case(
        "github",
        s.plain_key,
        f.sign_github,
        "pull_request",
        "GitHub docs (+ its published example, test_vectors.py)",
        malformed=tuple(
            {"X-Hub-Signature-256": v, "X-GitHub-Delivery": "d"}
            for v in ("", "sha256", "sha1=" + "a" * 40, "sha256=xyz", "sha256=" + "a" * 63, HEX64)
        ),
    ),
    Case(
        "shopify",
        f.prefixed_key("shpss_"),
        f.sign_shopify,
        "orders/create",
        "Shopify docs",
        malformed=tuple(
            {"X-Shopify-Hmac-Sha256": v, "X-Shopify-Event-Id": "e"}
            for v in ("", "!!!!", "abc", "a" * 44, "=" * 44, "YWJj")
        ),
    ),
    Case(
        "slack",
        s.plain_key,
        f.sign_slack,
        "app_mention",
        "slack_sdk SignatureVerifier signs",
        timestamped=True,
        malformed=(
            {"X-Slack-Signature": "v0=" + HEX64, "X-Slack-Request-Timestamp": "soon"},
            {"X-Slack-Signature": "v0=" + HEX64, "X-Slack-Request-Timestamp": "-5"},
            {"X-Slack-Signature": "v1=" + HEX64, "X-Slack-Request-Timestamp": "1"},
            {"X-Slack-Signature": "v0=nothex", "X-Slack-Request-Timestamp": "1"},
            {"X-Slack-Signature": "v0=" + HEX64},
        ),
    ),
    Case(
        "paddle",
        f.prefixed_key("pdl_ntfset_"),
        f.sign_paddle,
        "subscription.updated",
        "paddle-python-sdk PaddleSignature signs",
        timestamped=True,
        malformed=tuple(
            {"Paddle-Signature": v}
            for v in (
                "",
                "ts=1",
                "ts=x;h1=" + HEX64,
                "h1=" + HEX64,
                "ts=1;h1=zz",
                "ts=1,h1=ab",
                "ts=1;h2=" + HEX64,
            )
        ),
    ),
    Case(
        "standard",
        s.whsec_key,
        f.sign_standard,
        "invoice.paid",
        "standardwebhooks signs",
        timestamped=True,
        malformed=(
            {"webhook-id": "m", "webhook-timestamp": "1", "webhook-signature": "v1,!!!"},
            {"webhook-id": "m", "webhook-timestamp": "x", "webhook-signature": "v1,YWJj"},
            {"webhook-id": "m", "webhook-timestamp": "1", "webhook-signature": "v2,YWJj"},
            {"webhook-id": "m", "webhook-timestamp": "1", "webhook-signature": "nocomma"},
            {"webhook-id": "m", "webhook-signature": "v1,YWJj"},
            {"svix-id": "m", "svix-timestamp": "1", "svix-signature": ""},
        ),
    ),
    Case(
        "standard",
        s.whsec_key,
        f.sign_svix_as_standard,
        "invoice.paid",
        "svix signs",
        timestamped=True,
        source="svix",
    ),
]
CASES = [
    *FIRST,
    Case(
        "twilio",
        s.plain_key,
        s.sign_twilio,
        "delivered",
        "twilio RequestValidator",
        tamper=replace_once(b"=delivered", b"=Delivered"),
        ack=b'<?xml version="1.0" encoding="UTF-8"?><Response/>',
        malformed=({"X-Twilio-Signature": "!!!"}, {"X-Twilio-Signature": "YWJj"}, {}),
    ),
    Case(
        "square",
        s.plain_key,
        s.sign_square,
        "payment.updated",
        "squareup verify_signature",
        malformed=(
            {"x-square-hmacsha256-signature": "%%"},
            {"x-square-hmacsha256-signature": HEX64},
        ),
    ),
    Case(
        "gitlab",
        s.plain_key,
        s.sign_gitlab,
        "Push Hook",
        "GitLab docs (secret token)",
        tamper=change_header("X-Gitlab-Token"),
        malformed=({"X-Gitlab-Token": ""}, {"X-Gitlab-Token": "é"}),
    ),
    Case(
        "meta",
        s.plain_key,
        s.sign_meta,
        "whatsapp_business_account",
        "pywa webhook_updates_validator",
        variables=lambda key: {"VERIFY_TOKEN": "verify-me-please"},
        malformed=({"X-Hub-Signature-256": "sha1=" + "a" * 40}, {"X-Hub-Signature-256": HEX64}),
    ),
    Case(
        "linear",
        s.plain_key,
        s.sign_linear,
        "Issue",
        "Linear docs (+ @linear/sdk, see research)",
        timestamped=True,
        malformed=({"Linear-Signature": "xyz"}, {"Linear-Signature": "a" * 63}),
    ),
    Case(
        "zoom",
        s.plain_key,
        s.sign_zoom,
        "meeting.started",
        "Zoom docs",
        timestamped=True,
        malformed=(
            {"x-zm-signature": "v0=" + HEX64, "x-zm-request-timestamp": "soon"},
            {"x-zm-signature": "v1=" + HEX64, "x-zm-request-timestamp": "1"},
            {"x-zm-signature": "v0=" + HEX64},
        ),
    ),
    Case(
        "twitch",
        s.plain_key,
        s.sign_twitch,
        "channel.follow",
        "Twitch docs (vector checked by twitchAPI)",
        timestamped=True,
        own_window=True,
        malformed=(
            {
                "Twitch-Eventsub-Message-Signature": "sha256=" + HEX64,
                "Twitch-Eventsub-Message-Id": "m",
                "Twitch-Eventsub-Message-Timestamp": "yesterday",
            },
            {
                "Twitch-Eventsub-Message-Signature": "sha256=" + HEX64,
                "Twitch-Eventsub-Message-Timestamp": "2019-11-16T10:11:12Z",
            },
        ),
    ),
    Case(
        "calendly",
        s.plain_key,
        s.sign_calendly,
        "invitee.created",
        "Calendly docs",
        timestamped=True,
        own_window=True,
        malformed=(
            {"Calendly-Webhook-Signature": "t=1"},
            {"Calendly-Webhook-Signature": "v1=" + HEX64},
            {"Calendly-Webhook-Signature": "t=x,v1=" + HEX64},
            {"Calendly-Webhook-Signature": "t=1,t=2,v1=" + HEX64},
        ),
    ),
    Case(
        "typeform",
        s.plain_key,
        s.sign_typeform,
        "form_response",
        "Typeform docs",
        malformed=({"Typeform-Signature": "sha256=!!"}, {"Typeform-Signature": "YWJj"}),
    ),
    Case(
        "hubspot",
        s.plain_key,
        s.sign_hubspot,
        "contact.creation",
        "hubspot-api-client Signature",
        timestamped=True,
        malformed=(
            {"X-HubSpot-Signature-v3": "YWJj", "X-HubSpot-Request-Timestamp": "1"},
            {"X-HubSpot-Signature-v3": "a" * 44, "X-HubSpot-Request-Timestamp": "-1"},
        ),
    ),
    Case(
        "intercom",
        s.plain_key,
        s.sign_intercom,
        "conversation.user.created",
        "Intercom docs",
        malformed=({"X-Hub-Signature": "sha256=" + HEX64}, {"X-Hub-Signature": "sha1=zz"}),
    ),
    Case(
        "lemonsqueezy",
        s.plain_key,
        s.sign_lemonsqueezy,
        "order_created",
        "Lemon Squeezy docs",
        malformed=({"X-Signature": "sha256=" + HEX64},),
    ),
    Case(
        "razorpay",
        s.plain_key,
        s.sign_razorpay,
        "payment.captured",
        "razorpay Utility.verify_webhook_signature",
        malformed=({"X-Razorpay-Signature": "nothex"},),
    ),
    Case(
        "mailgun",
        s.plain_key,
        s.sign_mailgun,
        "delivered",
        "mailgun SecurityGuard.verify_webhook",
        timestamped=True,
        tamper=change_mailgun_token,
    ),
    Case(
        "sentry",
        s.plain_key,
        s.sign_sentry,
        "issue",
        "Sentry server code (build_signature)",
        malformed=({"Sentry-Hook-Signature": "x"},),
    ),
    Case(
        "pagerduty",
        s.plain_key,
        s.sign_pagerduty,
        "incident.triggered",
        "PagerDuty docs",
        malformed=(
            {"X-PagerDuty-Signature": "v1="},
            {"X-PagerDuty-Signature": ",,,"},
            {"X-PagerDuty-Signature": HEX64},
        ),
    ),
    Case(
        "woocommerce",
        s.plain_key,
        s.sign_woocommerce,
        "order.created",
        "WooCommerce source (class-wc-webhook.php)",
        malformed=({"X-WC-Webhook-Signature": "****"},),
    ),
    Case(
        "zendesk",
        s.plain_key,
        s.sign_zendesk,
        "zen:event-type:ticket.created",
        "Zendesk docs",
        timestamped=True,
        malformed=(
            {
                "X-Zendesk-Webhook-Signature": "YWJj",
                "X-Zendesk-Webhook-Signature-Timestamp": "2021-13-40",
            },
            {"X-Zendesk-Webhook-Signature": "a" * 44},
        ),
    ),
    Case(
        "dropbox",
        s.plain_key,
        s.sign_dropbox,
        "notification",
        "Dropbox docs (+ hapi-dropbox-webhooks vector)",
        malformed=({"X-Dropbox-Signature": "zz"},),
    ),
    Case(
        "xero",
        s.plain_key,
        s.sign_xero,
        "events",
        "Xero docs (intent to receive)",
        malformed=({"x-xero-signature": "not base64"},),
    ),
    Case(
        "adyen",
        s.hex_key,
        s.sign_adyen,
        "AUTHORISATION",
        "Adyen generate_notification_sig",
        tamper=replace_once(b'"value": 1130', b'"value": 1131'),
        ack=b"[accepted]",
    ),
    Case(
        "braintree",
        s.braintree_key,
        s.sign_braintree,
        "subscription_went_past_due",
        "braintree WebhookTesting + WebhookNotification.parse",
        tamper=replace_once(b"bt_payload=C", b"bt_payload=D"),
        variables=lambda key: {"PUBLIC_KEY": key.material.config.public_key},
    ),
    Case(
        "resend",
        s.whsec_key,
        s.sign_resend,
        "email.delivered",
        "svix signs, resend Webhooks.verify",
        timestamped=True,
        malformed=(
            {"svix-id": "m", "svix-timestamp": "1", "svix-signature": "v1,!!!"},
            {"svix-id": "m", "svix-timestamp": "x", "svix-signature": "v1,YWJj"},
        ),
    ),
    Case(
        "clerk",
        s.whsec_key,
        s.sign_clerk,
        "user.created",
        "svix (Clerk's documented verifier)",
        timestamped=True,
        malformed=({"svix-id": "m", "svix-signature": "v1,YWJj"},),
    ),
    Case(
        "discord",
        s.ed25519_key,
        s.sign_discord,
        "application_command",
        "PyNaCl signs, discord-interactions verify_key",
        timestamped=True,
        ack=b'{"type":5}',
        malformed=(
            {"X-Signature-Ed25519": "zz", "X-Signature-Timestamp": "1"},
            {"X-Signature-Ed25519": "a" * 128, "X-Signature-Timestamp": "x"},
            {"X-Signature-Ed25519": "a" * 128},
        ),
    ),
    Case(
        "sendgrid",
        s.p256_key,
        s.sign_sendgrid,
        "delivered",
        "sendgrid EventWebhook.verify_signature",
        timestamped=True,
        malformed=(
            {
                "X-Twilio-Email-Event-Webhook-Signature": "MEUCIQ",
                "X-Twilio-Email-Event-Webhook-Timestamp": "1",
            },
            {
                "X-Twilio-Email-Event-Webhook-Signature": "YWJjZGVmZ2hpamtsbW5vcA==",
                "X-Twilio-Email-Event-Webhook-Timestamp": "1",
            },
        ),
    ),
    Case(
        "sns",
        s.sns_key,
        s.sign_sns,
        "Notification",
        "AWS docs, self-signed certificate on a local fake",
        timestamped=True,
        own_window=True,
        tamper=replace_once(b'order\\": 1', b'order\\": 2'),
        variables=lambda key: {"TOPICS": fake_keys.TOPIC},
        settings={"webhook_fetch_allow": FETCH_ALLOW_LOCAL},
    ),
    Case(
        "plaid",
        s.plaid_key,
        s.sign_plaid,
        "TRANSACTIONS.SYNC_UPDATES_AVAILABLE",
        "PyJWT signs ES256, keys from a local fake",
        timestamped=True,
        own_window=True,
        variables=lambda key: {"CLIENT_ID": fake_keys.PLAID_CLIENT_ID, "API_BASE": fake_keys.url()},
        settings={"webhook_fetch_allow": FETCH_ALLOW_LOCAL},
        malformed=(
            {"Plaid-Verification": "a.b"},
            {"Plaid-Verification": "e30.e30.e30"},
            {"Plaid-Verification": "eyJhbGciOiJub25lIn0.e30."},
            # A part whose length no base64 has, and one that is not ASCII.
            {"Plaid-Verification": "e30AB.e30.e30"},
            {"Plaid-Verification": "e30.\xe930.e30"},
            # A header that is base64 but not JSON ("not json").
            {"Plaid-Verification": "bm90IGpzb24.e30.e30"},
        ),
    ),
]
BY_NAME = {case.name: case for case in CASES}
TIMESTAMPED = [c for c in CASES if c.timestamped]
