"""The verifier interface every provider module implements, and the helpers they share.

A verifier turns a request (`Inbound`: raw bytes, headers, now, and for the schemes that
sign them the URL and method) into a `Delivery` or raises a `WebhookError`.
It checks the signature over exactly the bytes received, before parsing anything, and
compares digests in constant time. Every malformed input is an error with a status code,
so no provider quirk can surface as a 500.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from app.errors import InvalidPayload, InvalidSignature, StaleTimestamp
from app.jobstate import PayloadFormat
from app.providers.request import Inbound, MethodNotAllowed, Reply
from app.sources import SourceConfig

MAX_EVENT_ID_LENGTH = 256


@dataclass(frozen=True, slots=True)
class Delivery:
    """What a verified request tells the rest of the pipeline."""

    event_id: str
    event_type: str
    # Provider headers a handler may need (delivery ids, topic...); never signature headers.
    headers: dict[str, str] = field(default_factory=dict)
    # Set when the provider expects an answer instead of an event (Slack's URL check):
    # the receiver sends it back and enqueues nothing.
    reply: Reply | None = None
    payload_format: PayloadFormat = PayloadFormat.JSON
    # The answer once the event is accepted (or is a duplicate), when the provider wants
    # something else than our JSON: Adyen's `[accepted]`, empty TwiML, Discord's deferral.
    ack: Reply | None = None
    # A request that carries several events, each signed on its own (Adyen's batches): each
    # is claimed by its own id and queued with its own bytes (`raw`), so an item replayed
    # inside another batch is still a duplicate.
    batch: tuple[Delivery, ...] = ()
    raw: bytes | None = None
    # Where `id_signed` is False: what the signature covers, when that is not the body's
    # bytes (Twilio's sorted form fields, Mailgun's timestamp and token). The receiver
    # claims its digest, else the body's, so a re-sent request under a fresh id is a
    # duplicate however its unsigned parts were rewritten.
    signed: bytes | None = None

    def signed_digest(self, raw: bytes) -> str:
        """The dedupe key's digest of what the signature covers, for `id_signed = False`.
        A signed body is claimed under its type, as a provider may send one body under two
        topics (Shopify's products/create and products/update): two events. Not a signed
        nonce (Mailgun's token): the rest of that body, the type too, is the sender's."""
        kind = self.event_type.encode() if self.signed is None else b""
        digest = hashlib.sha256(b"%d:%s" % (len(kind), kind))
        digest.update(raw if self.signed is None else self.signed)  # no copy of the body
        return digest.hexdigest()


class Verifier:
    """Verifies one source's requests.

    Subclasses set `provider` and implement `verify` (schemes that sign the body and
    headers) or override `check` (schemes that also sign the URL or the method).
    """

    provider: str = ""
    # The receiver builds `Inbound.url` only for these: it costs a little on every request.
    signs_url: bool = False
    # These are checked with `check_async`: they fetch a key or certificate first.
    fetches_keys: bool = False
    # False where the event id comes from something the signature does not cover (an
    # unsigned header): the receiver then also dedupes by a digest of the signed bytes, so
    # a captured request re-sent under a fresh id is still a duplicate.
    id_signed: bool = True

    def __init__(self, source: SourceConfig) -> None:
        self.source = source
        # Encoded once: secrets are used on every request.
        self.keys = tuple(s.get_secret_value().encode() for s in source.secrets)

    def check(self, request: Inbound) -> Delivery:
        """Return the delivery, or raise `InvalidSignature`, `StaleTimestamp`, `InvalidPayload`."""
        return self.verify(request.body, request.headers, request.now)

    # These two defaults run for no provider: each implements `verify` or overrides
    # `check`, and `check_async` is awaited only for `fetches_keys` verifiers, which all
    # override it. They stay so that callers, typed `Verifier`, may call every method.
    def verify(self, body: bytes, headers: Mapping[str, str], now: float) -> Delivery:
        raise NotImplementedError(f"{type(self).__name__} implements check()")

    async def check_async(self, request: Inbound) -> Delivery:
        return self.check(request)

    def handshake(self, request: Inbound) -> Reply:
        """The answer to a GET on the source's URL; only some providers verify that way."""
        raise MethodNotAllowed(f"provider {self.provider!r} has no GET handshake; POST events")


def parse_hex(value: str) -> bytes | None:
    try:
        return bytes.fromhex(value)
    except ValueError:
        return None


def event_id_from(value: object, where: str) -> str:
    """A usable event id: a non-empty string (or integer) of printable characters."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise InvalidPayload(f"no event id: {where} is missing or not a string")
    text = str(value)
    if not text or len(text) > MAX_EVENT_ID_LENGTH or not text.isprintable():
        raise InvalidPayload(
            f"event id in {where} must be 1 to {MAX_EVENT_ID_LENGTH} printable characters"
        )
    return text


def event_type_from(value: object) -> str:
    """The event type exactly as the sender gave it, or "" when it gave none (only "*"
    handlers then match). Never shortened or cleaned here: dispatch needs the real type,
    and every place that displays it escapes it (`display_label` for RQ's description)."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return ""


def check_body_timestamp(payload: Mapping[str, Any], tolerance: int, now: float) -> None:
    """Reject a signed body whose `created` (unix seconds) is outside the tolerance, both ways."""
    created = payload.get("created")
    if created is None:
        return
    if isinstance(created, bool) or not isinstance(created, int | float):
        raise InvalidPayload("'created' must be unix seconds")
    if abs(now - created) > tolerance:
        raise StaleTimestamp("timestamp outside the replay tolerance")


def header(headers: Mapping[str, str], name: str) -> str:
    """A required header, stripped; missing or empty is a verification failure."""
    value = headers.get(name, "").strip()
    if not value:
        raise InvalidSignature(f"missing {name} header")
    return value


def parse_timestamp(value: str) -> int:
    """A signed unix timestamp; anything else means the signature header is malformed."""
    value = value.strip()
    # isascii: `isdigit` is also true of '²', which int() refuses.
    if not (value.isascii() and value.isdigit()) or len(value) > 12:
        raise InvalidSignature("malformed signature timestamp")
    return int(value)


def check_window(timestamp: int, now: float, tolerance: int, *, future_too: bool) -> None:
    """Refuse a signed timestamp older than the tolerance (and newer, when `future_too`)."""
    if timestamp < now - tolerance or (future_too and timestamp > now + tolerance):
        raise StaleTimestamp("timestamp outside the replay tolerance")


def b64decode(value: str) -> bytes | None:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None


def key_value_pairs(value: str, separator: str) -> list[tuple[str, str]]:
    """`t=1,v1=ab` -> [("t", "1"), ("v1", "ab")]; an item without `=` is malformed."""
    pairs = []
    for item in value.split(separator):
        key, equals, val = item.strip().partition("=")
        if not equals:
            raise InvalidSignature("malformed signature header")
        pairs.append((key.strip(), val.strip()))
    return pairs


def pick_headers(headers: Mapping[str, str], names: Iterable[str]) -> dict[str, str]:
    """The named headers that are present, under their lower-case names."""
    return {name: headers[name] for name in names if headers.get(name)}
