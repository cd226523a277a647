"""What a signer is given and what it returns: a test event in, the request a provider
would send out, byte for byte.

A signer is the mirror of its provider's verifier (`app/providers/`): it builds the
provider's envelope around the event (a realistic minimal body, the provider's delivery
headers), signs it with the source's secret as the provider does, and says which event
id the receiver will answer with. `webhooks send` and the pytest plugin use the same
signers, and a test holds each to its verifier and, where one exists, to the provider's
SDK.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from app.errors import InvalidPayload
from app.providers.base import event_id_from
from app.settings import SourceConfig


class SigningError(Exception):
    """The event cannot be signed for this source (no key to sign with, data of the wrong
    shape for the provider's envelope); the message says what to give instead."""


@dataclass(frozen=True, slots=True)
class EventToSign:
    """The event to send. `data` replaces the sample's event object (Stripe's
    `data.object`, the whole body for `hmac`); None keeps the provider's sample.

    Where `data` holds the place the provider's event id is read from (hmac's `id`,
    Mailgun's `event-data.id`...), that id is the event's (`own_id`): `event_id` must then
    be the same, unless it was made up for want of one (`id_given=False`)."""

    event_id: str
    event_type: str
    url: str  # the URL it is posted to: the URL-signing schemes sign it
    data: Any = None
    timestamp: int = field(default_factory=lambda: int(time.time()))
    id_given: bool = True
    type_given: bool = True  # False: event_type is the provider's default, filled in


@dataclass(frozen=True, slots=True)
class Keys:
    """What a signer signs with: the source's secret (the first of a rotation list) or
    `--secret`, as `WEBHOOK_SECRET_<NAME>` holds it (each signer decodes it as its
    verifier does); for the asymmetric schemes, the private key (PEM) the dev stack made.
    Other per-source values (Braintree's public key...) are in `source.variables`."""

    secret: str = ""
    private_key: bytes = b""


@dataclass(frozen=True, slots=True)
class SignedRequest:
    """The request as the provider sends it: POST to `url` (query included)."""

    url: str
    headers: dict[str, str]
    body: bytes
    # The id the receiver answers with (`{"status": ..., "id": ...}`), or would log.
    event_id: str
    method: str = "POST"


class Signer(Protocol):
    def __call__(self, source: SourceConfig, event: EventToSign, keys: Keys) -> SignedRequest: ...


def own_id(event: EventToSign, value: object, provider: str, where: str) -> str | None:
    """The event id `event.data` carries itself, `value`, read from `where` in it, the place
    the provider's id is read from: None when the data has none there (null or absent), and
    the signer writes `event.event_id` there. Otherwise the data is sent as given (its id
    stays a number if it is one) and this text is the event id, which an id given must
    equal: the body's own id is never rewritten, and a disagreement is one line."""
    if value is None:
        return None
    try:
        text = event_id_from(value, f"the data's {where}")
    except InvalidPayload as exc:
        raise SigningError(f"{provider}: {exc}") from None
    if event.id_given and text != event.event_id:
        raise SigningError(
            f"{provider}: the data has its own {where}, {text!r}, and the id given is "
            f"{event.event_id!r}: give the same id, or none"
        )
    return text


def own_type(event: EventToSign, value: object, provider: str) -> str | None:
    """The type `event.data` carries itself (`value`), as `own_id` reads its id: None when it
    has none, else the data's own, which a type given must equal (never rewritten)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise SigningError(f"{provider}: the data's type must be a string, not {value!r}")
    if event.type_given and event.event_type and event.event_type != value:
        raise SigningError(
            f"{provider}: the data has its own type, {value!r}, and the type given is "
            f"{event.event_type!r}: give the same type, or none"
        )
    return value


JSON_NAMES = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
# What HTTP drops around a header's value on the way (RFC 9110's optional whitespace).
HEADER_SPACE = " \t"


def object_data(data: Any, provider: str, what: str) -> dict[str, Any]:
    """`data` where the envelope needs a JSON object (`what`: the place it replaces)."""
    if isinstance(data, dict):
        return data
    given = JSON_NAMES.get(type(data), "a number")
    raise SigningError(
        f"{provider}: the event data replaces {what} and must be a JSON object, not {given}"
    )


def event_object(event: EventToSign, provider: str, what: str) -> dict[str, Any] | None:
    """`event.data` as `object_data` takes it; None (no data: the sample stays) as is."""
    return None if event.data is None else object_data(event.data, provider, what)


def header_value(value: str, provider: str, header: str, *, secret: bool = False) -> str:
    """A value as it arrives in the provider's header `header` (an event id, a type, a
    token): without the outer spaces HTTP drops on the way, so the id a signer announces
    is the one the receiver reads. HTTP carries only printable ASCII there, and the
    receiver refuses an empty value. A secret's value is never repeated in the message."""
    sent = value.strip(HEADER_SPACE)
    if not sent or not sent.isascii() or not sent.isprintable():
        given = "the secret given" if secret else repr(value)
        raise SigningError(f"{provider} sends {header} in a header: printable ASCII, not {given}")
    return sent


def hmac_digest(key: bytes, message: bytes, algorithm: str = "sha256") -> bytes:
    return hmac.new(key, message, getattr(hashlib, algorithm)).digest()


def hex_hmac(key: bytes, message: bytes, algorithm: str = "sha256") -> str:
    return hmac_digest(key, message, algorithm).hex()


def b64_hmac(key: bytes, message: bytes, algorithm: str = "sha256") -> str:
    return base64.b64encode(hmac_digest(key, message, algorithm)).decode()


def require_secret(keys: Keys, source: SourceConfig) -> bytes:
    if not keys.secret:
        raise SigningError(
            f"source {source.name!r} has no secret to sign with: set "
            f"{source.variable_name('WEBHOOK_SECRET_')} or pass --secret"
        )
    return keys.secret.encode()
