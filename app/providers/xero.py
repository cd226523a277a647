"""`xero`: `x-xero-signature: <base64>`, HMAC-SHA256 of the raw body with the webhooks key.

The key is used exactly as Xero shows it (it looks like base64; Xero's samples do not
decode it). Handshake, "intent to receive": when a webhook is saved Xero sends bodies with
`"events": []`, some signed correctly and some not, and requires 200 with an empty body
for the first and 401 for the others; nothing is enqueued for them. A notification has no
id of its own, so the id is the body's SHA-256; the type is always `events`.
"""

from __future__ import annotations

from typing import Any

from app.providers.recipe import RecipeVerifier
from app.providers.recipe_spec import Recipe
from app.providers.request import Inbound, Reply

RECIPE = Recipe.model_validate(
    {
        "signature_header": "x-xero-signature",
        "encoding": "base64",
        "id": "digest",
        "type": "const:events",
    }
)


class XeroVerifier(RecipeVerifier):
    provider = "xero"
    preset = RECIPE

    def handshake_reply(self, request: Inbound, payload: Any, key: bytes) -> Reply | None:
        if isinstance(payload, dict) and payload.get("events") == []:
            return Reply.empty()
        return None
