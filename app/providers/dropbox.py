"""`dropbox`: `X-Dropbox-Signature: <hex>`, HMAC-SHA256 of the raw body with the app secret.

A notification only says "these accounts changed" and carries no id, so the id is the
body's SHA-256 and the type is always `notification`. Handshake: Dropbox verifies the
endpoint with `GET ?challenge=<text>` and wants the text back as `text/plain` with
`X-Content-Type-Options: nosniff`; that request is not signed, and nothing is enqueued.
"""

from __future__ import annotations

from urllib.parse import parse_qsl

from app.providers.meta import echo
from app.providers.recipe import RecipeVerifier
from app.providers.recipe_spec import Recipe
from app.providers.request import Inbound, Reply

RECIPE = Recipe.model_validate(
    {"signature_header": "X-Dropbox-Signature", "id": "digest", "type": "const:notification"}
)


class DropboxVerifier(RecipeVerifier):
    provider = "dropbox"
    preset = RECIPE

    def handshake(self, request: Inbound) -> Reply:
        return echo(dict(parse_qsl(request.query, keep_blank_values=True)).get("challenge"))
