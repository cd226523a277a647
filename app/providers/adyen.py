"""`adyen` (standard webhooks, HMAC): a signature inside each notification item.

Each `NotificationRequestItem` carries `additionalData.hmacSignature`, the base64
HMAC-SHA256 of `pspReference:originalReference:merchantAccountCode:merchantReference:
value:currency:eventCode:success` (missing or null fields empty), keyed with the
hex-decoded HMAC key from the Customer Area. Every item of the request must verify. The
body is parsed to reach the items; nothing else of it is trusted before they verify, and a
signed field of another JSON type than Adyen sends (a list, an object, a fraction) is
refused rather than signed as some text it does not hold.

The id is `pspReference:eventCode:success` of the item and the type its `eventCode`. A
request with several items is several events: each is claimed by its own id and queued
as a notification of its own (`{"live": ..., "notificationItems": [<the item>]}`, which
verifies alone, as each item carries its signature), because Adyen's HMAC has no
timestamp and a batch's digest would let a captured item run again inside any new
batch. A body that repeats a key is refused: the signed fields are read from the parsed
body, and a handler's first-wins parser could read other values than those verified.
Adyen expects the text `[accepted]` back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from app.errors import InvalidPayload, InvalidSignature
from app.providers.base import (
    Delivery,
    Verifier,
    b64decode,
    event_id_from,
    event_type_from,
    parse_hex,
)
from app.providers.fields import body_digest, common_type
from app.providers.json_body import parse_json_value
from app.providers.request import Reply
from app.providers.signatures import check_hmac
from app.sources import ConfigError, SourceConfig

ACCEPTED = Reply(b"[accepted]", "text/plain; charset=utf-8")
MAX_ITEMS = 100
ID_FIELDS = ("pspReference", "eventCode", "success")


def _text(value: object, name: str = "") -> str:
    """A signed field as the text Adyen signs: a string or an integer as written, missing or
    null empty, and `success` also as a boolean. Any other type (a list, an object, a
    fraction) would sign as "" or as its Python spelling and let a changed value pass for a
    signed one, so it is refused."""
    if value is None:
        return ""
    if isinstance(value, bool):
        if name != "success":
            raise InvalidSignature(f"notification item field {name!r} is not text")
        return "true" if value else "false"
    if not isinstance(value, str | int):
        raise InvalidSignature(f"notification item field {name!r} is not text")
    return str(value)


def signing_string(item: Mapping[str, Any]) -> str:
    amount = item.get("amount")
    if amount is None:
        amount = {}
    if not isinstance(amount, dict):
        raise InvalidSignature("notification item field 'amount' is not an object")
    return ":".join(
        _text(value, name)
        for name, value in (
            ("pspReference", item.get("pspReference")),
            ("originalReference", item.get("originalReference")),
            ("merchantAccountCode", item.get("merchantAccountCode")),
            ("merchantReference", item.get("merchantReference")),
            ("value", amount.get("value")),
            ("currency", amount.get("currency")),
            ("eventCode", item.get("eventCode")),
            ("success", item.get("success")),
        )
    )


class AdyenVerifier(Verifier):
    provider = "adyen"

    def __init__(self, source: SourceConfig) -> None:
        super().__init__(source)
        keys = [parse_hex(s.get_secret_value()) for s in source.secrets]
        if not all(keys):
            raise ConfigError(
                f"{source.variable_name('WEBHOOK_SECRET_')}: an Adyen HMAC key is hex, "
                "as the Customer Area shows it"
            )
        self.keys = tuple(k for k in keys if k)

    def verify(self, body: bytes, headers: Mapping[str, str], now: float) -> Delivery:
        payload = parse_json_value(body, unique_keys=True)
        items = _items(payload)
        for item in items:
            extra = item.get("additionalData")
            signature = extra.get("hmacSignature") if isinstance(extra, dict) else None
            given = b64decode(signature) if isinstance(signature, str) else None
            if given is None or len(given) != 32:
                raise InvalidSignature("a notification item has no well-formed hmacSignature")
            check_hmac(self.keys, signing_string(item).encode(), [given])
        events = [_event(item) for item in items]
        if len(events) == 1:
            return events[0]
        live = payload.get("live") if isinstance(payload, dict) else None
        return Delivery(
            event_id=body_digest("\n".join(e.event_id for e in events).encode()),
            event_type=common_type(e.event_type for e in events),
            ack=ACCEPTED,
            batch=tuple(
                replace(event, raw=_alone(live, item))
                for event, item in zip(events, items, strict=True)
            ),
        )


def _event(item: Mapping[str, Any]) -> Delivery:
    event_id = ":".join(_text(item.get(k), k) for k in ID_FIELDS)
    return Delivery(
        event_id=event_id_from(event_id, "pspReference"),
        event_type=event_type_from(item.get("eventCode")),
        ack=ACCEPTED,
    )


def _alone(live: object, item: Mapping[str, Any]) -> bytes:
    """One item as a notification of its own, as Adyen sends a batch of one. ASCII, with
    escapes: an unsigned field may hold a lone surrogate ("\\ud800", valid JSON), which
    no UTF-8 encoder takes."""
    wrapped = {"live": live, "notificationItems": [{"NotificationRequestItem": item}]}
    return json.dumps(wrapped, separators=(",", ":")).encode()


def _items(payload: Any) -> list[dict[str, Any]]:
    wrapped = payload.get("notificationItems") if isinstance(payload, dict) else None
    if not isinstance(wrapped, list) or not 0 < len(wrapped) <= MAX_ITEMS:
        raise InvalidSignature("no notificationItems to verify")
    items = [w.get("NotificationRequestItem") if isinstance(w, dict) else None for w in wrapped]
    if not all(isinstance(i, dict) for i in items):
        raise InvalidPayload("malformed notificationItems")
    return [i for i in items if isinstance(i, dict)]
