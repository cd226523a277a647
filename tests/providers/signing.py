"""Requests signed as each provider signs them (the first seven: `signing_first`).

Where PyPI has the provider's SDK, the SDK signs the request, or (when it can only
verify) the request is built by hand and the SDK must accept it before the test uses it:
the SDK is the oracle the receiver must agree with. Where no SDK exists, the scheme is
built from the provider's documentation, and `test_vectors.py` checks the same code
against the provider's published example.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import Adyen.util
import braintree
import jwt
import nacl.signing
import razorpay
import resend
import svix.webhooks
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from discord_interactions import verify_key
from hubspot.utils.signature import Signature as HubSpotSignature
from mailgun.security import SecurityGuard
from pywa import utils as pywa_utils
from sendgrid.helpers.eventwebhook import EventWebhook
from square.utils.webhooks_helper import verify_signature as square_verify
from twilio.request_validator import RequestValidator

from tests.providers import fake_keys

BASE = "http://testserver/webhooks/"


@dataclass(frozen=True)
class Key:
    """What WEBHOOK_SECRET_<NAME> holds, and what the sender signs with."""

    secret: str
    material: Any = None


@dataclass(frozen=True)
class Request:
    body: bytes
    headers: dict[str, str]
    event_id: str  # the id the receiver must report
    query: str = ""

    def url(self, source: str) -> str:
        return BASE + source + (f"?{self.query}" if self.query else "")


def digest_id(body: bytes) -> str:
    return "sha256:" + hashlib.sha256(body).hexdigest()


def hex_hmac(secret: str | bytes, message: bytes, algorithm: str = "sha256") -> str:
    key = secret.encode() if isinstance(secret, str) else secret
    return hmac.new(key, message, algorithm).hexdigest()


def b64_hmac(secret: str | bytes, message: bytes, algorithm: str = "sha256") -> str:
    key = secret.encode() if isinstance(secret, str) else secret
    return base64.b64encode(hmac.new(key, message, algorithm).digest()).decode()


def iso(ts: int) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def dumps(value: object) -> bytes:
    return json.dumps(value).encode()


# --- keys --------------------------------------------------------------------------------


def plain_key(seed: str) -> Key:
    return Key(f"secret-{seed}-0123456789")


def whsec_key(seed: str) -> Key:
    return Key("whsec_" + base64.b64encode(hashlib.sha256(seed.encode()).digest()).decode())


def hex_key(seed: str) -> Key:
    return Key(hashlib.sha256(seed.encode()).hexdigest().upper())


def ed25519_key(seed: str) -> Key:
    signing = nacl.signing.SigningKey(hashlib.sha256(seed.encode()).digest())
    return Key(signing.verify_key.encode().hex(), signing)


def p256_key(seed: str) -> Key:
    private = ec.derive_private_key(
        int.from_bytes(hashlib.sha256(seed.encode()).digest(), "big"), ec.SECP256R1()
    )
    der = private.public_key().public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    return Key(base64.b64encode(der).decode(), private)


def braintree_key(seed: str) -> Key:
    public, private = f"pk_{seed}", f"private-key-{seed}-0123456789"
    config = braintree.Configuration(
        braintree.Environment.Sandbox, merchant_id="m", public_key=public, private_key=private
    )
    return Key(private, braintree.BraintreeGateway(config))


def sns_key(seed: str) -> Key:
    return Key("", fake_keys.certificate(seed))


def plaid_key(seed: str) -> Key:
    return Key(f"plaid-secret-{seed}-0123456789", fake_keys.jwk_signer(seed))


# --- signers: (key, event id, unix seconds) -> Request ------------------------------------


def sign_twilio(key: Key, event_id: str, ts: int) -> Request:
    params = {"MessageSid": "SM" + event_id, "MessageStatus": "delivered", "To": "+15550001"}
    query = "tenant=eu"
    signature = RequestValidator(key.secret).compute_signature(f"{BASE}twilio?{query}", params)
    headers = {
        "X-Twilio-Signature": signature,
        "I-Twilio-Idempotency-Token": event_id,
        "Content-Type": "application/x-www-form-urlencoded",
    }
    return Request(urlencode(params).encode(), headers, event_id, query)


def sign_square(key: Key, event_id: str, ts: int) -> Request:
    body = dumps({"merchant_id": "M1", "type": "payment.updated", "event_id": event_id})
    signature = b64_hmac(key.secret, f"{BASE}square".encode() + body)
    assert square_verify(
        request_body=body.decode(),
        signature_header=signature,
        signature_key=key.secret,
        notification_url=f"{BASE}square",
    )
    return Request(body, {"x-square-hmacsha256-signature": signature}, event_id)


def sign_gitlab(key: Key, event_id: str, ts: int) -> Request:
    body = dumps({"object_kind": "push", "ref": "refs/heads/main", "checkout_sha": event_id})
    headers = {"X-Gitlab-Token": key.secret, "X-Gitlab-Event": "Push Hook"}
    return Request(body, {**headers, "Idempotency-Key": event_id}, event_id)


def sign_meta(key: Key, event_id: str, ts: int) -> Request:
    body = dumps({"object": "whatsapp_business_account", "entry": [{"id": event_id}]})
    signature = "sha256=" + hex_hmac(key.secret, body)
    assert pywa_utils.webhook_updates_validator(key.secret, body, signature)
    return Request(body, {"X-Hub-Signature-256": signature}, digest_id(body))


def sign_linear(key: Key, event_id: str, ts: int) -> Request:
    body = dumps(
        {
            "action": "create",
            "type": "Issue",
            "data": {"id": event_id},
            "webhookTimestamp": ts * 1000,
        }
    )
    headers = {
        "Linear-Signature": hex_hmac(key.secret, body),
        "Linear-Delivery": event_id,
        "Linear-Event": "Issue",
    }
    return Request(body, headers, event_id)


def sign_zoom(key: Key, event_id: str, ts: int) -> Request:
    body = dumps({"event": "meeting.started", "payload": {"object": {"id": event_id}}})
    signature = "v0=" + hex_hmac(key.secret, f"v0:{ts}:".encode() + body)
    headers = {"x-zm-signature": signature, "x-zm-request-timestamp": str(ts)}
    return Request(body, headers, digest_id(body))


def sign_twitch(key: Key, event_id: str, ts: int, kind: str = "notification") -> Request:
    body = dumps({"subscription": {"type": "channel.follow"}, "event": {"user_id": "1"}})
    stamp = datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.123456789Z")
    signature = "sha256=" + hex_hmac(key.secret, f"{event_id}{stamp}".encode() + body)
    headers = {
        "Twitch-Eventsub-Message-Id": event_id,
        "Twitch-Eventsub-Message-Timestamp": stamp,
        "Twitch-Eventsub-Message-Signature": signature,
        "Twitch-Eventsub-Message-Type": kind,
        "Twitch-Eventsub-Subscription-Type": "channel.follow",
    }
    return Request(body, headers, event_id)


def sign_calendly(key: Key, event_id: str, ts: int) -> Request:
    body = dumps({"event": "invitee.created", "payload": {"uri": event_id}})
    signature = f"t={ts},v1=" + hex_hmac(key.secret, f"{ts}.".encode() + body)
    return Request(body, {"Calendly-Webhook-Signature": signature}, digest_id(body))


def sign_typeform(key: Key, event_id: str, ts: int) -> Request:
    body = dumps({"event_id": event_id, "event_type": "form_response"})
    return Request(body, {"Typeform-Signature": "sha256=" + b64_hmac(key.secret, body)}, event_id)


def sign_hubspot(key: Key, event_id: str, ts: int, attempt: int = 0) -> Request:
    event = {"eventId": 1, "subscriptionType": "contact.creation", "objectId": event_id}
    body = dumps([{**event, "attemptNumber": attempt}])
    stamp = str(ts * 1000)
    signature = HubSpotSignature.get_signature(
        key.secret, body.decode(), "v3", f"{BASE}hubspot", "POST", stamp
    )
    headers = {"X-HubSpot-Signature-v3": signature, "X-HubSpot-Request-Timestamp": stamp}
    canonical = json.dumps([event], sort_keys=True, separators=(",", ":")).encode()
    return Request(body, headers, digest_id(canonical))


def sign_intercom(key: Key, event_id: str, ts: int) -> Request:
    body = dumps(
        {"type": "notification_event", "id": event_id, "topic": "conversation.user.created"}
    )
    return Request(
        body, {"X-Hub-Signature": "sha1=" + hex_hmac(key.secret, body, "sha1")}, event_id
    )


def sign_lemonsqueezy(key: Key, event_id: str, ts: int) -> Request:
    body = dumps({"meta": {"event_name": "order_created"}, "data": {"id": event_id}})
    headers = {"X-Signature": hex_hmac(key.secret, body), "X-Event-Name": "order_created"}
    return Request(body, headers, digest_id(body))


def sign_razorpay(key: Key, event_id: str, ts: int) -> Request:
    body = dumps(
        {
            "entity": "event",
            "event": "payment.captured",
            "payload": {"payment": {"entity": {"id": event_id}}},
            "created_at": ts,
        }
    )
    signature = hex_hmac(key.secret, body)
    client = razorpay.Client(auth=("rzp_test", "unused"))
    assert client.utility.verify_webhook_signature(body.decode(), signature, key.secret)
    headers = {"X-Razorpay-Signature": signature, "X-Razorpay-Event-Id": event_id}
    return Request(body, headers, event_id)


def sign_mailgun(key: Key, event_id: str, ts: int) -> Request:
    token = hashlib.sha256(f"{event_id}{ts}".encode()).hexdigest()[:50]
    signature = hex_hmac(key.secret, f"{ts}{token}".encode())
    assert SecurityGuard.verify_webhook(key.secret, token, ts, signature, max_age_seconds=0)
    signed = {"timestamp": str(ts), "token": token, "signature": signature}
    body = dumps({"signature": signed, "event-data": {"id": event_id, "event": "delivered"}})
    return Request(body, {"Content-Type": "application/json"}, event_id)


def sign_sentry(key: Key, event_id: str, ts: int) -> Request:
    body = dumps({"action": "created", "data": {"issue": {"id": event_id, "title": "café"}}})
    headers = {
        "Sentry-Hook-Signature": hex_hmac(key.secret, body),
        "Sentry-Hook-Resource": "issue",
        "Sentry-Hook-Timestamp": str(ts),
        "Request-ID": event_id,
    }
    return Request(body, headers, event_id)


def sign_pagerduty(key: Key, event_id: str, ts: int) -> Request:
    body = dumps({"event": {"id": event_id, "event_type": "incident.triggered"}})
    signature = "v1=" + "0" * 64 + ",v1=" + hex_hmac(key.secret, body)
    return Request(body, {"X-PagerDuty-Signature": signature}, event_id)


def sign_woocommerce(key: Key, event_id: str, ts: int) -> Request:
    body = dumps({"id": 727, "status": "processing", "total": "29.35", "order_key": event_id})
    headers = {
        "X-WC-Webhook-Signature": b64_hmac(key.secret, body),
        "X-WC-Webhook-Delivery-ID": event_id,
        "X-WC-Webhook-Topic": "order.created",
    }
    return Request(body, headers, event_id)


def sign_zendesk(key: Key, event_id: str, ts: int) -> Request:
    body = dumps({"type": "zen:event-type:ticket.created", "id": event_id})
    stamp = iso(ts)
    headers = {
        "X-Zendesk-Webhook-Signature": b64_hmac(key.secret, stamp.encode() + body),
        "X-Zendesk-Webhook-Signature-Timestamp": stamp,
    }
    return Request(body, headers, event_id)


def sign_dropbox(key: Key, event_id: str, ts: int) -> Request:
    body = dumps({"list_folder": {"accounts": [event_id]}, "delta": {"users": [12345678]}})
    return Request(body, {"X-Dropbox-Signature": hex_hmac(key.secret, body)}, digest_id(body))


def sign_xero(key: Key, event_id: str, ts: int) -> Request:
    body = dumps({"events": [{"resourceId": event_id}], "firstEventSequence": 1})
    return Request(body, {"x-xero-signature": b64_hmac(key.secret, body)}, digest_id(body))


def adyen_item(key: Key, psp: str, value: int = 1130) -> dict[str, Any]:
    item: dict[str, Any] = {
        "pspReference": psp,
        "merchantAccountCode": "TestMerchant",
        "merchantReference": "order-1",
        "amount": {"value": value, "currency": "EUR"},
        "eventCode": "AUTHORISATION",
        "success": "true",
    }
    signature = Adyen.util.generate_notification_sig(item, key.secret)
    item["additionalData"] = {"hmacSignature": signature.decode()}
    assert Adyen.util.is_valid_hmac_notification(item, key.secret)
    return {"NotificationRequestItem": item}


def sign_adyen(key: Key, event_id: str, ts: int) -> Request:
    body = dumps({"live": "false", "notificationItems": [adyen_item(key, event_id)]})
    return Request(body, {}, f"{event_id}:AUTHORISATION:true")


def sign_braintree(key: Key, event_id: str, ts: int) -> Request:
    kind = braintree.WebhookNotification.Kind.SubscriptionWentPastDue
    sample = key.material.webhook_testing.sample_notification(kind, event_id)
    payload = sample["bt_payload"]
    payload = payload.decode() if isinstance(payload, bytes) else payload
    key.material.webhook_notification.parse(sample["bt_signature"], payload)  # the SDK agrees
    body = urlencode({"bt_signature": sample["bt_signature"], "bt_payload": payload}).encode()
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    return Request(body, headers, digest_id(payload.encode()))


def sign_svix(key: Key, event_id: str, ts: int, event_type: str) -> Request:
    body = dumps({"type": event_type, "data": {"id": event_id}})
    when = datetime.fromtimestamp(ts, UTC)
    signature = svix.webhooks.Webhook(key.secret).sign(event_id, when, body.decode())
    headers = {"svix-id": event_id, "svix-timestamp": str(ts), "svix-signature": signature}
    return Request(body, headers, event_id)


def sign_resend(key: Key, event_id: str, ts: int) -> Request:
    signed = sign_svix(key, event_id, ts, "email.delivered")
    h = signed.headers
    resend.Webhooks.verify(
        {
            "payload": signed.body.decode(),
            "headers": {
                "id": h["svix-id"],
                "timestamp": h["svix-timestamp"],
                "signature": h["svix-signature"],
            },
            "webhook_secret": key.secret,
        }
    )
    return signed


def sign_clerk(key: Key, event_id: str, ts: int) -> Request:
    return sign_svix(key, event_id, ts, "user.created")


def sign_discord(key: Key, event_id: str, ts: int, kind: int = 2) -> Request:
    body = dumps({"type": kind, "id": event_id, "token": "tok", "data": {"name": "ping"}})
    signature = key.material.sign(str(ts).encode() + body).signature.hex()
    assert verify_key(body, signature, str(ts), key.secret)
    headers = {"X-Signature-Ed25519": signature, "X-Signature-Timestamp": str(ts)}
    return Request(body, headers, event_id)


def sign_sendgrid(key: Key, event_id: str, ts: int) -> Request:
    body = dumps([{"email": "a@example.com", "event": "delivered", "sg_event_id": event_id}])
    der = key.material.sign(str(ts).encode() + body, ec.ECDSA(hashes.SHA256()))
    signature = base64.b64encode(der).decode()
    assert EventWebhook(key.secret).verify_signature(body.decode(), signature, str(ts))
    headers = {
        "X-Twilio-Email-Event-Webhook-Signature": signature,
        "X-Twilio-Email-Event-Webhook-Timestamp": str(ts),
    }
    return Request(body, headers, digest_id(body))


def sign_sns(key: Key, event_id: str, ts: int, **fields: str) -> Request:
    message = fake_keys.sns_message(key.material, event_id, ts, **fields)
    headers = {"x-amz-sns-message-type": message["Type"], "Content-Type": "text/plain"}
    return Request(dumps(message), headers, event_id)


def sign_plaid(key: Key, event_id: str, ts: int) -> Request:
    body = dumps(
        {
            "webhook_type": "TRANSACTIONS",
            "webhook_code": "SYNC_UPDATES_AVAILABLE",
            "item_id": event_id,
        }
    )
    claims = {"iat": ts, "request_body_sha256": hashlib.sha256(body).hexdigest()}
    signer: fake_keys.JwkSigner = key.material
    token = jwt.encode(claims, signer.private, algorithm="ES256", headers={"kid": signer.kid})
    return Request(body, {"Plaid-Verification": token}, digest_id(body))


def without(request: Request, name: str) -> Request:
    return replace(request, headers={k: v for k, v in request.headers.items() if k != name})
