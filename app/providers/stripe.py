"""Stripe: `Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>...]`.

The signed string is `"{t}.{raw body}"`, HMAC-SHA256 in hex, keyed with the `whsec_...`
secret used as is. Any one `v1` may match (Stripe sends several while a secret rolls).
Only old timestamps are refused, as Stripe's own SDK does. Event id and type are the
body's `id` and `type`.
"""

from __future__ import annotations

from collections.abc import Mapping

from app.providers.base import (
    Delivery,
    Verifier,
    check_hmac,
    check_window,
    event_id_from,
    event_type_from,
    header,
    parse_json_object,
    timestamped_signatures,
)


class StripeVerifier(Verifier):
    provider = "stripe"

    def verify(self, body: bytes, headers: Mapping[str, str], now: float) -> Delivery:
        timestamp, signatures = timestamped_signatures(
            header(headers, "stripe-signature"), ",", "t", "v1", "Stripe-Signature"
        )
        signed = f"{timestamp}.".encode() + body
        check_hmac(self.keys, signed, signatures)
        check_window(timestamp, now, self.source.tolerance, future_too=False)
        payload = parse_json_object(body)
        return Delivery(
            event_id=event_id_from(payload.get("id"), "body 'id'"),
            event_type=event_type_from(payload.get("type")),
        )
