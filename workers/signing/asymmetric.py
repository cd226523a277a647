"""Signers of the asymmetric schemes (Discord, SendGrid, AWS SNS, Plaid): each provider signs
with a private key only it holds, and the source is configured with the public half. So
these sign only with `keys.private_key`, the development key pair `make run` makes for such
a source (`workers/dev/devkeys.py`), whose public half it configures the source with; with
no private key they raise `SigningError`, saying why and how to get one.

What each sends, what `event.data` replaces (None keeps the sample), and the id the receiver
answers with (`SignedRequest.event_id`):

  provider  body (type from `event.event_type`)      `event.data` replaces     id
  --------  ---------------------------------------  ------------------------  --------------
  discord   an interaction (`type`, `id`,            the interaction's `data`  body `id` =
            `application_id`, `token`, `data`...);   (an object)               event_id; a
            `application_command` (default),                                   PING: "" (it is
            `message_component`, `autocomplete`,                               answered PONG,
            `modal_submit`, `ping` -> `type` 2..5, 1                           never queued)
  sendgrid  a batch of one event (`email`,           the event (an object:     body digest
            `timestamp`, `event`, `sg_event_id`...)  `event`, `sg_event_id`
            `delivered` (default) -> `event`         default to type and id),
                                                     or the batch (a list)
  sns       a `Notification`, SignatureVersion 2;    `Message` (a string as    `MessageId` =
            `UnsubscribeConfirmation` as asked;      given, else as JSON)      event_id
            another type is a Notification's
            `Subject` (the receiver types by `Type`)
  plaid     `webhook_type`, `webhook_code`,          the body (an object:      body digest
            `item_id`, `environment`...;             `webhook_type`, `_code`,
            `TRANSACTIONS.SYNC_UPDATES_AVAILABLE`    `item_id` default to the
            (default) -> `<type>.<code>`             type and the id)

The bodies whose id is their digest (SendGrid, Plaid) depend only on (event id, type,
data), never on when they are sent (the time is in SendGrid's signed header and Plaid's
`iat`): the same id sent twice is the same body, which the receiver answers as a duplicate,
as it would a provider's redelivery. So SendGrid's events carry the sample's fixed
`timestamp`. Discord and SNS carry the id itself.

Key material (`keys.private_key`) is PEM: an unencrypted private key block (PKCS#8 or the
traditional form) of the provider's algorithm: Discord Ed25519, SendGrid and Plaid P-256,
SNS RSA. SNS also needs the URL its certificate is served at (the `SigningCertURL` the
verifier fetches): a line `SigningCertURL: <url>` outside the PEM blocks (RFC 7468's
explanatory text), which `devkeys.private_key_for` adds while the dev stack's key server
runs.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
import re
import uuid
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes, PublicKeyTypes
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from app.providers.discord import TYPES as DISCORD_TYPES
from app.providers.sns import is_certificate_url, string_to_sign
from app.settings import SourceConfig
from workers.signing.base import EventToSign, Keys, SignedRequest, Signer, SigningError

# SendGrid events carry the time they happened; the sample's is fixed so that its body,
# and so its id (a digest), is the same each time the same event is sent.
SAMPLE_TIME = 1_700_000_000
SIGNING_CERT_URL = "SigningCertURL"
_PEM_BLOCK = re.compile(rb"-----BEGIN ([A-Z0-9 ]+)-----\r?\n.*?-----END \1-----\r?\n?", re.DOTALL)
_CERT_URL_LINE = re.compile(
    rb"^" + SIGNING_CERT_URL.encode() + rb":[ \t]*(\S+)[ \t]*\r?$", re.MULTILINE
)

INTERACTION_TYPES = {"ping": 1, **{name: number for number, name in DISCORD_TYPES.items()}}
DEFAULT_TYPE = {
    "discord": "application_command",
    "sendgrid": "delivered",
    "sns": "Notification",
    "plaid": "TRANSACTIONS.SYNC_UPDATES_AVAILABLE",
}
# Who holds the private key, and what the source checks its signatures with instead.
_HOLDER = {
    "discord": ("Discord", "Discord", "the application's public key ({secret})"),
    "sendgrid": ("SendGrid", "SendGrid", "SendGrid's verification (public) key ({secret})"),
    "sns": ("AWS signs SNS messages", "AWS", "the certificate AWS serves"),
    "plaid": ("Plaid", "Plaid", "the public key it fetches from Plaid's API"),
}


# --- what the dev stack and the signers derive alike from a key ---------------------------


def public_der(key: PublicKeyTypes) -> bytes:
    return key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def sns_certificate_path(key: rsa.RSAPublicKey) -> str:
    """Where the dev key server serves the certificate of this key: AWS's one path shape,
    `/SimpleNotificationService-<32 hex>.pem`, named after the key (a name, not a check)."""
    return f"/SimpleNotificationService-{hashlib.sha256(public_der(key)).hexdigest()[:32]}.pem"


def plaid_key_id(key: ec.EllipticCurvePublicKey) -> str:
    """The `kid` of a P-256 key: a UUID, as Plaid's are, named after the key."""
    return str(uuid.UUID(bytes=hashlib.sha256(public_der(key)).digest()[:16], version=4))


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def plaid_jwk(key: ec.EllipticCurvePublicKey) -> dict[str, Any]:
    """The key as Plaid's `/webhook_verification_key/get` answers it (`{"key": <this>}`)."""
    numbers = key.public_numbers()
    return {
        "alg": "ES256",
        "crv": "P-256",
        "kid": plaid_key_id(key),
        "kty": "EC",
        "use": "sig",
        "x": _b64url(numbers.x.to_bytes(32, "big")),
        "y": _b64url(numbers.y.to_bytes(32, "big")),
        "created_at": SAMPLE_TIME,
        "expired_at": None,
    }


# --- keys -------------------------------------------------------------------------------


def no_key_message(source: SourceConfig) -> str:
    """Why this source cannot be signed without a private key, and how to get one: one line."""
    signs, holder, checks = _HOLDER[source.provider]
    secret = source.variable_name("WEBHOOK_SECRET_")
    unset = {
        "discord": f" with {secret} unset",
        "sendgrid": f" with {secret} unset",
        "plaid": f" with {secret} and {source.variable_name('WEBHOOK_API_BASE_')} unset",
    }.get(source.provider, "")
    signs = signs if " " in signs else f"{signs} signs"
    checks = checks.format(secret=secret)
    return (
        f"source {source.name!r} ({source.provider}) cannot be signed: {signs} with a private "
        f"key only {holder} holds, and the source checks the signatures with {checks}; "
        f"to send to it, run it in `make run`'s stack{unset}, which makes a development key "
        "pair and configures the source with its public key"
    )


def load_private_key(keys: Keys, source: SourceConfig) -> PrivateKeyTypes | None:
    """The first private key block of `keys.private_key` (PEM), None when none loads;
    `SigningError` (why, and how to get one) when no key was given at all."""
    if not keys.private_key:
        raise SigningError(no_key_message(source))
    for block in _PEM_BLOCK.finditer(keys.private_key):
        if block.group(1).endswith(b"PRIVATE KEY"):
            try:
                return serialization.load_pem_private_key(block.group(0), password=None)
            except (ValueError, TypeError):
                return None
    return None


def wrong_key(source: SourceConfig, what: str) -> SigningError:
    return SigningError(
        f"source {source.name!r}: the private key given is not an unencrypted PEM {what} "
        f"key, which {source.provider} signs with"
    )


def _p256(keys: Keys, source: SourceConfig) -> ec.EllipticCurvePrivateKey:
    key = load_private_key(keys, source)
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.curve.name != "secp256r1":
        raise wrong_key(source, "P-256")
    return key


def _json(value: Any, source: SourceConfig) -> bytes:
    try:
        return json.dumps(
            value, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        ).encode()
    except (TypeError, ValueError) as exc:
        raise SigningError(f"source {source.name!r}: the data is not JSON ({exc})") from None


def _hex(*parts: str, length: int = 32) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:length]


def _snowflake(*parts: str) -> str:
    """A Discord-like id (18 digits) named after `parts`: the same parts, the same id."""
    number = int.from_bytes(hashlib.sha256("\0".join(parts).encode()).digest()[:8], "big")
    return str(10**17 + number % (9 * 10**17))


# --- Discord ----------------------------------------------------------------------------


def _interaction_data(kind: int, command: str) -> dict[str, Any]:
    if kind == 2:
        return {"id": command, "name": "hello", "type": 1}
    if kind == 3:
        return {"custom_id": "hello-button", "component_type": 2}
    if kind == 4:
        option = {"name": "query", "type": 3, "value": "he", "focused": True}
        return {"id": command, "name": "hello", "type": 1, "options": [option]}
    field = {"type": 4, "custom_id": "answer", "value": "hello"}
    return {"custom_id": "hello-modal", "components": [{"type": 1, "components": [field]}]}


def sign_discord(source: SourceConfig, event: EventToSign, keys: Keys) -> SignedRequest:
    key = load_private_key(keys, source)
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise wrong_key(source, "Ed25519")
    name = event.event_type or DEFAULT_TYPE["discord"]
    kind = INTERACTION_TYPES.get(name)
    if kind is None:
        raise SigningError(
            f"source {source.name!r}: a Discord interaction's type is one of "
            f"{', '.join(INTERACTION_TYPES)} (got {name!r})"
        )
    application = _snowflake("application", public_der(key.public_key()).hex())
    interaction: dict[str, Any] = {
        "type": kind,
        "id": event.event_id,
        "application_id": application,
        "token": "dev." + _hex(application, event.event_id, length=64),
        "version": 1,
    }
    if kind == 1:
        if event.data is not None:
            raise SigningError(f"source {source.name!r}: a Discord PING carries no data")
    else:
        data = _interaction_data(kind, _snowflake("command", application))
        if event.data is not None:
            if not isinstance(event.data, dict):
                raise SigningError(
                    f"source {source.name!r}: a Discord interaction's data is a JSON object"
                )
            data = event.data
        interaction["channel_id"] = _snowflake("channel", application)
        interaction["user"] = {"id": _snowflake("user", application), "username": "dev"}
        interaction["locale"] = "en-US"
        interaction["data"] = data
    body = _json(interaction, source)
    stamp = str(event.timestamp)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "Discord-Interactions/1.0 (+https://discord.com)",
        "X-Signature-Ed25519": key.sign(stamp.encode() + body).hex(),
        "X-Signature-Timestamp": stamp,
    }
    # A PING is answered PONG and enqueued under no id.
    return SignedRequest(event.url, headers, body, "" if kind == 1 else event.event_id)


# --- SendGrid ---------------------------------------------------------------------------


def _sendgrid_event(event: EventToSign, kind: str) -> dict[str, Any]:
    message = _hex("sendgrid-message", event.event_id, length=20)
    return {
        "email": "example@example.com",
        "timestamp": SAMPLE_TIME,
        "smtp-id": f"<{message}@ismtpd0001p1iad1.sendgrid.net>",
        "event": kind,
        "category": ["dev"],
        "sg_event_id": event.event_id,
        "sg_message_id": f"{message}.filter0001.1.0",
    }


def sign_sendgrid(source: SourceConfig, event: EventToSign, keys: Keys) -> SignedRequest:
    key = _p256(keys, source)
    kind = event.event_type or DEFAULT_TYPE["sendgrid"]
    batch: list[Any]
    if event.data is None:
        batch = [_sendgrid_event(event, kind)]
    elif isinstance(event.data, dict):
        batch = [{"event": kind, "sg_event_id": event.event_id, **event.data}]
    elif isinstance(event.data, list):
        batch = event.data
    else:
        raise SigningError(
            f"source {source.name!r}: SendGrid's data is an event (a JSON object) or a batch "
            "(a JSON array of events)"
        )
    body = _json(batch, source)
    stamp = str(event.timestamp)
    signature = key.sign(stamp.encode() + body, ec.ECDSA(hashes.SHA256()))
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "SendGrid Event API",
        "X-Twilio-Email-Event-Webhook-Signature": base64.b64encode(signature).decode(),
        "X-Twilio-Email-Event-Webhook-Timestamp": stamp,
    }
    return SignedRequest(event.url, headers, body, "sha256:" + hashlib.sha256(body).hexdigest())


# --- AWS SNS ----------------------------------------------------------------------------


def _topic(source: SourceConfig) -> str:
    """An ARN the source accepts: its first WEBHOOK_TOPICS_<NAME> entry, wildcards filled."""
    pattern = next((t.strip() for t in source.variable("WEBHOOK_TOPICS_").split(",")), "")
    if not pattern:
        raise SigningError(
            f"source {source.name!r}: {source.variable_name('WEBHOOK_TOPICS_')} is not set, "
            "so no topic ARN would be accepted"
        )
    topic = pattern.replace("*", "dev").replace("?", "x")
    if not fnmatch.fnmatchcase(topic, pattern):
        raise SigningError(
            f"source {source.name!r}: cannot make a topic ARN out of "
            f"{source.variable_name('WEBHOOK_TOPICS_')}'s first pattern"
        )
    return topic


def _certificate_url(keys: Keys, source: SourceConfig) -> str:
    found = _CERT_URL_LINE.search(_PEM_BLOCK.sub(b"", keys.private_key))
    url = found.group(1).decode("ascii", "replace") if found else ""
    if not url:
        raise SigningError(
            f"source {source.name!r}: no SigningCertURL for its key: the certificate is served "
            "by the key server of `make run`'s stack, which is not running"
        )
    if not is_certificate_url(url):
        raise SigningError(
            f"source {source.name!r}: SigningCertURL must be "
            "<origin>/SimpleNotificationService-<32 hex>.pem"
        )
    return url


def sign_sns(source: SourceConfig, event: EventToSign, keys: Keys) -> SignedRequest:
    key = load_private_key(keys, source)
    if not isinstance(key, rsa.RSAPrivateKey):
        raise wrong_key(source, "RSA")
    certificate_url = _certificate_url(keys, source)
    origin = certificate_url[: certificate_url.index("/SimpleNotificationService-")]
    topic = _topic(source)
    kind = event.event_type or DEFAULT_TYPE["sns"]
    if kind == "SubscriptionConfirmation":
        raise SigningError(
            f"source {source.name!r}: a SubscriptionConfirmation makes the receiver call its "
            "SubscribeURL; send a Notification or an UnsubscribeConfirmation"
        )
    subscription = f"{topic}:{uuid.uuid5(uuid.NAMESPACE_URL, topic + '#' + source.name)}"
    if event.data is None:
        message = _json({"id": event.event_id}, source).decode()
    elif isinstance(event.data, str):
        message = event.data
    else:
        message = _json(event.data, source).decode()
    stamp = datetime.fromtimestamp(event.timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    # In the order SNS writes them.
    fields: dict[str, str] = {"Type": "Notification", "MessageId": event.event_id}
    if kind == "UnsubscribeConfirmation":
        token = _hex("sns-token", topic, event.event_id, length=64)
        fields |= {
            "Type": kind,
            "Token": token,
            "TopicArn": topic,
            "Message": f"You have chosen to deactivate subscription {subscription}.\n"
            "To cancel this operation and restore the subscription, visit the SubscribeURL "
            "included in this message.",
            "SubscribeURL": f"{origin}/?Action=ConfirmSubscription&TopicArn="
            f"{quote(topic, safe='')}&Token={token}",
        }
    else:
        fields["TopicArn"] = topic
        if kind != "Notification":
            fields["Subject"] = kind
        fields["Message"] = message
    fields |= {"Timestamp": stamp, "SignatureVersion": "2"}
    signature = key.sign(string_to_sign(fields), padding.PKCS1v15(), hashes.SHA256())
    fields["Signature"] = base64.b64encode(signature).decode()
    fields["SigningCertURL"] = certificate_url
    if fields["Type"] == "Notification":
        fields["UnsubscribeURL"] = (
            f"{origin}/?Action=Unsubscribe&SubscriptionArn={quote(subscription, safe='')}"
        )
    headers = {
        "Content-Type": "text/plain; charset=UTF-8",
        "User-Agent": "Amazon Simple Notification Service Agent",
        "x-amz-sns-message-type": fields["Type"],
        "x-amz-sns-message-id": event.event_id,
        "x-amz-sns-topic-arn": topic,
        "x-amz-sns-subscription-arn": subscription,
    }
    return SignedRequest(event.url, headers, _json(fields, source), event.event_id)


# --- Plaid ------------------------------------------------------------------------------


def _plaid_body(source: SourceConfig, event: EventToSign) -> dict[str, Any]:
    kind = event.event_type or DEFAULT_TYPE["plaid"]
    webhook_type, dot, webhook_code = kind.partition(".")
    if not (webhook_type and dot and webhook_code):
        raise SigningError(
            f"source {source.name!r}: a Plaid type is <webhook_type>.<webhook_code> "
            f"(TRANSACTIONS.SYNC_UPDATES_AVAILABLE), got {kind!r}"
        )
    named = {"webhook_type": webhook_type, "webhook_code": webhook_code}
    if event.data is not None:
        if not isinstance(event.data, dict):
            raise SigningError(f"source {source.name!r}: a Plaid body is a JSON object")
        return {**named, "item_id": event.event_id, **event.data}
    body: dict[str, Any] = {**named, "item_id": event.event_id}
    if kind == "TRANSACTIONS.SYNC_UPDATES_AVAILABLE":
        body |= {"initial_update_complete": True, "historical_update_complete": True}
    body["environment"] = "sandbox"
    return body


def sign_plaid(source: SourceConfig, event: EventToSign, keys: Keys) -> SignedRequest:
    key = _p256(keys, source)
    body = _json(_plaid_body(source, event), source)
    head = {"alg": "ES256", "kid": plaid_key_id(key.public_key()), "typ": "JWT"}
    claims = {"iat": event.timestamp, "request_body_sha256": hashlib.sha256(body).hexdigest()}
    signed = f"{_b64url(_json(head, source))}.{_b64url(_json(claims, source))}"
    r, s = decode_dss_signature(key.sign(signed.encode(), ec.ECDSA(hashes.SHA256())))
    token = f"{signed}.{_b64url(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"
    headers = {"Content-Type": "application/json", "Plaid-Verification": token}
    return SignedRequest(event.url, headers, body, "sha256:" + hashlib.sha256(body).hexdigest())


SIGNERS: dict[str, Signer] = {
    "discord": sign_discord,
    "sendgrid": sign_sendgrid,
    "sns": sign_sns,
    "plaid": sign_plaid,
}

__all__ = [
    "DEFAULT_TYPE",
    "SIGNERS",
    "SIGNING_CERT_URL",
    "no_key_message",
    "plaid_jwk",
    "plaid_key_id",
    "public_der",
    "sns_certificate_path",
]
