"""Stripe: `Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>...]`.

The signed string is `"{t}.{raw body}"`, HMAC-SHA256 in hex, keyed with the `whsec_...`
secret used as is. Any one `v1` may match (Stripe sends several while a secret rolls).
Only old timestamps are refused, as Stripe's own SDK does. Event id and type are the
body's `id` and `type`.
"""

from __future__ import annotations

from collections.abc import Mapping

from app.errors import InvalidSignature
from app.providers.base import (
    Delivery,
    Verifier,
    any_signature_matches,
    check_window,
    event_id_from,
    event_type_from,
    header,
    hmac_sha256,
    key_value_pairs,
    parse_hex,
    parse_json_object,
    parse_timestamp,
)


class StripeVerifier(Verifier):
    provider = "stripe"

    def verify(self, body: bytes, headers: Mapping[str, str], now: float) -> Delivery:
        pairs = key_value_pairs(header(headers, "stripe-signature"), ",")
        stamps = [value for key, value in pairs if key == "t"]
        if len(stamps) != 1:
            raise InvalidSignature("Stripe-Signature needs exactly one t=")
        timestamp = parse_timestamp(stamps[0])
        given = [parse_hex(value) for key, value in pairs if key == "v1"]
        signatures = [sig for sig in given if sig is not None and len(sig) == 32]
        if not signatures:
            raise InvalidSignature("Stripe-Signature has no valid v1 signature")
        signed = f"{timestamp}.".encode() + body
        if not any_signature_matches((hmac_sha256(k, signed) for k in self.keys), signatures):
            raise InvalidSignature("signature does not match")
        check_window(timestamp, now, self.source.tolerance, future_too=False)
        payload = parse_json_object(body)
        return Delivery(
            event_id=event_id_from(payload.get("id"), "body 'id'"),
            event_type=event_type_from(payload.get("type")),
        )
