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
`timestamp`. Discord and SNS carry the id itself. A SendGrid event's own `sg_event_id` and
a Plaid body's own `item_id` in `event.data` stay as given: an id given must equal them
(`base.own_id`).

Key material (`keys.private_key`) is PEM: an unencrypted private key block (PKCS#8 or the
traditional form) of the provider's algorithm: Discord Ed25519, SendGrid and Plaid P-256,
SNS RSA. SNS also needs the URL its certificate is served at (the `SigningCertURL` the
verifier fetches): a line `SigningCertURL: <url>` outside the PEM blocks (RFC 7468's
explanatory text), which `devkeys.private_key_for` adds while the dev stack's key server
runs.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from app.providers.discord import TYPES as DISCORD_TYPES
from app.settings import SourceConfig
from workers.signing.asymmetric_fetched import sign_plaid, sign_sns
from workers.signing.asymmetric_keys import (
    SAMPLE_TIME,
    hex_of,
    json_bytes,
    load_private_key,
    p256_key,
    public_der,
    snowflake,
    wrong_key,
)
from workers.signing.base import (
    EventToSign,
    Keys,
    SignedRequest,
    Signer,
    SigningError,
    own_id,
)
from workers.signing.defaults import DEFAULT_TYPE

INTERACTION_TYPES = {"ping": 1, **{name: number for number, name in DISCORD_TYPES.items()}}

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
    application = snowflake("application", public_der(key.public_key()).hex())
    interaction: dict[str, Any] = {
        "type": kind,
        "id": event.event_id,
        "application_id": application,
        "token": "dev." + hex_of(application, event.event_id, length=64),
        "version": 1,
    }
    if kind == 1:
        if event.data is not None:
            raise SigningError(f"source {source.name!r}: a Discord PING carries no data")
    else:
        data = _interaction_data(kind, snowflake("command", application))
        if event.data is not None:
            if not isinstance(event.data, dict):
                raise SigningError(
                    f"source {source.name!r}: a Discord interaction's data is a JSON object"
                )
            data = event.data
        interaction["channel_id"] = snowflake("channel", application)
        interaction["user"] = {"id": snowflake("user", application), "username": "dev"}
        interaction["locale"] = "en-US"
        interaction["data"] = data
    body = json_bytes(interaction, source)
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
    message = hex_of("sendgrid-message", event.event_id, length=20)
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
    key = p256_key(keys, source)
    kind = event.event_type or DEFAULT_TYPE["sendgrid"]
    batch: list[Any]
    if event.data is None:
        batch = [_sendgrid_event(event, kind)]
    elif isinstance(event.data, dict):
        item = {"event": kind, "sg_event_id": event.event_id, **event.data}
        if own_id(event, event.data.get("sg_event_id"), "sendgrid", "sg_event_id") is None:
            item["sg_event_id"] = event.event_id  # over a null
        batch = [item]
    elif isinstance(event.data, list):
        batch = event.data
    else:
        raise SigningError(
            f"source {source.name!r}: SendGrid's data is an event (a JSON object) or a batch "
            "(a JSON array of events)"
        )
    body = json_bytes(batch, source)
    stamp = str(event.timestamp)
    signature = key.sign(stamp.encode() + body, ec.ECDSA(hashes.SHA256()))
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "SendGrid Event API",
        "X-Twilio-Email-Event-Webhook-Signature": base64.b64encode(signature).decode(),
        "X-Twilio-Email-Event-Webhook-Timestamp": stamp,
    }
    return SignedRequest(event.url, headers, body, "sha256:" + hashlib.sha256(body).hexdigest())


SIGNERS: dict[str, Signer] = {
    "discord": sign_discord,
    "sendgrid": sign_sendgrid,
    "sns": sign_sns,
    "plaid": sign_plaid,
}
