"""Stripe: `Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>...]`.

The signed string is `"{t}.{raw body}"`, HMAC-SHA256 in hex, keyed with the `whsec_...`
secret used as is. Any one `v1` may match (Stripe sends several while a secret rolls).
Only old timestamps are refused, as Stripe's own SDK does. Event id and type are the
body's `id` and `type`.
"""

from __future__ import annotations

from app.providers.recipe_spec import Recipe
from app.providers.timestamped import TimestampedVerifier

RECIPE = Recipe.model_validate(
    {
        "signature_header": "Stripe-Signature",
        "signature_separator": ",",
        "signature_key": "v1",
        "signed": "{timestamp}.{body}",
        "timestamp": "signature:t",
        "future_refused": False,
        "id": "json:id",
        "type": "json:type",
    }
)


class StripeVerifier(TimestampedVerifier):
    provider = "stripe"
    preset = RECIPE
