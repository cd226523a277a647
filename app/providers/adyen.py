"""`adyen` (standard webhooks, HMAC): a signature inside each notification item.

Each `NotificationRequestItem` carries `additionalData.hmacSignature`, the base64
HMAC-SHA256 of `pspReference:originalReference:merchantAccountCode:merchantReference:
value:currency:eventCode:success` (missing or null fields empty), keyed with the
hex-decoded HMAC key from the Customer Area. Every item of the request must verify. The
body is parsed to reach the items; nothing else of it is trusted before they verify, and a
signed field of another JSON type than Adyen sends (a list, an object, a fraction) is
refused rather than signed as some text it does not hold.

The id is `pspReference:eventCode:success` of the item (of a batch: the SHA-256 of all
of them); the type is `eventCode` (of a batch: shared, else `batch`). Adyen expects the
text `[accepted]` back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.errors import InvalidPayload, InvalidSignature
from app.providers.base import Delivery, Verifier, b64decode, check_hmac, event_id_from, parse_hex
from app.providers.fields import body_digest, common_type
from app.providers.json_body import parse_json_value
from app.providers.request import Reply
from app.settings import ConfigError, SourceConfig

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
        payload = parse_json_value(body)
        items = _items(payload)
        for item in items:
            extra = item.get("additionalData")
            signature = extra.get("hmacSignature") if isinstance(extra, dict) else None
            given = b64decode(signature) if isinstance(signature, str) else None
            if given is None or len(given) != 32:
                raise InvalidSignature("a notification item has no well-formed hmacSignature")
            check_hmac(self.keys, signing_string(item).encode(), [given])
        keys = [":".join(_text(i.get(k), k) for k in ID_FIELDS) for i in items]
        event_id = keys[0] if len(keys) == 1 else body_digest("\n".join(keys).encode())
        return Delivery(
            event_id=event_id_from(event_id, "pspReference"),
            event_type=common_type(i.get("eventCode") for i in items),
            ack=ACCEPTED,
        )


def _items(payload: Any) -> list[dict[str, Any]]:
    wrapped = payload.get("notificationItems") if isinstance(payload, dict) else None
    if not isinstance(wrapped, list) or not 0 < len(wrapped) <= MAX_ITEMS:
        raise InvalidSignature("no notificationItems to verify")
    items = [w.get("NotificationRequestItem") if isinstance(w, dict) else None for w in wrapped]
    if not all(isinstance(i, dict) for i in items):
        raise InvalidPayload("malformed notificationItems")
    return [i for i in items if isinstance(i, dict)]
