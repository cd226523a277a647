"""Stripe: `Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>...]`.

The signed string is `"{t}.{raw body}"`, HMAC-SHA256 in hex, keyed with the `whsec_...`
secret used as is. Any one `v1` may match (Stripe sends several while a secret rolls).
Only old timestamps are refused, as Stripe's own SDK does. Event id and type are the
body's `id` and `type`.
"""

from __future__ import annotations

from app.providers.base import TimestampedHexVerifier


class StripeVerifier(TimestampedHexVerifier):
    provider = "stripe"
    header_name = "Stripe-Signature"
    separator, stamp_key, signature_key, joiner = ",", "t", "v1", "."
    future_refused = False
    id_field, type_field = "id", "type"
