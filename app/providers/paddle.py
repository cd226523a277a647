"""Paddle Billing: `Paddle-Signature: ts=<unix>;h1=<hex>[;h1=<hex>...]`.

The signed string is `"{ts}:{raw body}"`, HMAC-SHA256 in hex with the endpoint secret
(`pdl_ntfset_...`) used as is; any one `h1` may match. The timestamp must be within the
tolerance both ways (Paddle's SDK allows only 5 s; set REPLAY_TOLERANCE_<NAME> to tighten).
Event id and type are the body's `event_id` and `event_type`.
"""

from __future__ import annotations

from app.providers.recipe_spec import Recipe
from app.providers.timestamped import TimestampedVerifier

RECIPE = Recipe.model_validate(
    {
        "signature_header": "Paddle-Signature",
        "signature_separator": ";",
        "signature_key": "h1",
        "signed": "{timestamp}:{body}",
        "timestamp": "signature:ts",
        "id": "json:event_id",
        "type": "json:event_type",
    }
)


class PaddleVerifier(TimestampedVerifier):
    provider = "paddle"
    preset = RECIPE
