"""`sendgrid` (signed Event Webhook): ECDSA P-256 / SHA-256 over timestamp + raw body.

`X-Twilio-Email-Event-Webhook-Signature` is the base64 DER signature and
`X-Twilio-Email-Event-Webhook-Timestamp` the unix seconds it covers (within the tolerance
both ways). WEBHOOK_SECRET_<NAME> is the verification key exactly as SendGrid shows it:
base64 of the DER public key (`MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE...`).

The body is a JSON array of events, one request per batch: the id is the body's SHA-256
(SendGrid resends the same batch), the type the events' shared `event`, else `batch`.
Each event's own `sg_event_id` is in the payload for per-event dedupe.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping

from cryptography.exceptions import InvalidSignature as BadSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import load_der_public_key

from app.errors import InvalidPayload, InvalidSignature
from app.providers.base import (
    Delivery,
    Verifier,
    b64decode,
    check_window,
    event_id_from,
    header,
    parse_timestamp,
)
from app.providers.fields import body_digest, common_type
from app.providers.json_body import parse_json_value
from app.sources import ConfigError, SourceConfig

MAX_SIGNATURE = 80  # a P-256 DER signature is at most 72 bytes


def p256_keys(source: SourceConfig) -> tuple[ec.EllipticCurvePublicKey, ...]:
    keys = []
    for secret in source.secrets:
        try:
            key = load_der_public_key(base64.b64decode(secret.get_secret_value(), validate=True))
        except (binascii.Error, ValueError):
            key = None
        if not isinstance(key, ec.EllipticCurvePublicKey) or key.curve.name != "secp256r1":
            raise ConfigError(
                f"{source.variable_name('WEBHOOK_SECRET_')}: a SendGrid verification key is "
                "the base64 P-256 public key SendGrid shows"
            )
        keys.append(key)
    return tuple(keys)


class SendGridVerifier(Verifier):
    provider = "sendgrid"

    def __init__(self, source: SourceConfig) -> None:
        super().__init__(source)
        self.public_keys = p256_keys(source)

    def verify(self, body: bytes, headers: Mapping[str, str], now: float) -> Delivery:
        stamp = header(headers, "x-twilio-email-event-webhook-timestamp")
        signature = b64decode(header(headers, "x-twilio-email-event-webhook-signature"))
        if signature is None or not 8 <= len(signature) <= MAX_SIGNATURE:
            raise InvalidSignature("malformed X-Twilio-Email-Event-Webhook-Signature header")
        timestamp = parse_timestamp(stamp)
        message = stamp.encode() + body
        if not any(_valid(key, signature, message) for key in self.public_keys):
            raise InvalidSignature("signature does not match")
        check_window(timestamp, now, self.source.tolerance, future_too=True)
        events = parse_json_value(body)
        if not isinstance(events, list):
            raise InvalidPayload("a SendGrid body is a JSON array of events")
        return Delivery(
            event_id=event_id_from(body_digest(body), "body"),
            event_type=common_type(e.get("event") for e in events if isinstance(e, dict)),
        )


def _valid(key: ec.EllipticCurvePublicKey, signature: bytes, message: bytes) -> bool:
    try:
        key.verify(signature, message, ec.ECDSA(hashes.SHA256()))
    except BadSignature:
        return False
    return True
