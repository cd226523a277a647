"""`zoom`: `x-zm-signature: v0=<hex>` over `v0:{x-zm-request-timestamp}:{body}`.

HMAC-SHA256 with the app's Secret Token; the timestamp (unix seconds) must be within the
tolerance both ways. Zoom sends no event id, so the id is the body's SHA-256 (a retry
resends the same body); the type is the body's `event`.

Handshake: `endpoint.url_validation` (on save, then every 72 hours) carries a
`payload.plainToken`; once the request is verified, the answer is
`{"plainToken": ..., "encryptedToken": hex(HMAC-SHA256(secret, plainToken))}`.

That answer is the same HMAC, with the same key, as a delivery's signature: a plainToken
spelt `v0:{ts}:{body}` would be answered with the signature of that body. Only a request
that already verifies is answered, so an outsider cannot pick the token; still, a token
that starts as every signed string does (`v0:`) is refused, so the two can never meet,
whoever picks it. Zoom's own tokens are random URL-safe base64, with no `:`.
"""

from __future__ import annotations

from typing import Any

from app.errors import InvalidPayload
from app.providers.fields import json_path
from app.providers.recipe import RecipeVerifier
from app.providers.recipe_spec import Recipe
from app.providers.request import Inbound, Reply
from app.providers.signatures import hmac_digest

# How every signed string of a delivery starts (RECIPE's `signed`): no plainToken may.
SIGNED_PREFIX = "v0:"
RECIPE = Recipe.model_validate(
    {
        "signature_header": "x-zm-signature",
        "signature_prefix": "v0=",
        "signed": "v0:{timestamp}:{body}",
        "timestamp": "header:x-zm-request-timestamp",
        "id": "digest",
        "type": "json:event",
        "headers": ["x-zm-trackingid"],
    }
)


class ZoomVerifier(RecipeVerifier):
    provider = "zoom"
    preset = RECIPE

    def handshake_reply(self, request: Inbound, payload: Any, key: bytes) -> Reply | None:
        if json_path(payload, "event") != "endpoint.url_validation":
            return None
        plain = json_path(payload, "payload.plainToken")
        if not isinstance(plain, str) or not plain or len(plain) > 256:
            raise InvalidPayload("endpoint.url_validation without a plainToken")
        if plain.startswith(SIGNED_PREFIX):
            raise InvalidPayload("a plainToken must not be spelt as a signed delivery")
        encrypted = hmac_digest("sha256", key, plain.encode()).hex()
        return Reply.json({"plainToken": plain, "encryptedToken": encrypted})
