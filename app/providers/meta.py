"""`meta`: WhatsApp Cloud API, Instagram, Messenger and other Graph API webhooks.

Events: `X-Hub-Signature-256: sha256=<hex>`, HMAC-SHA256 of the raw body with the app
secret (a recipe preset). Meta sends no event id (bodies are batches of `entry` items), so
the id is the body's SHA-256; the type is the body's `object` (`whatsapp_business_account`,
`page`, `instagram`).

Handshake: when the callback URL is saved, Meta calls
`GET ?hub.mode=subscribe&hub.verify_token=<token>&hub.challenge=<n>` and expects the
challenge back. The token is one you choose, in WEBHOOK_VERIFY_TOKEN_<NAME>; a wrong one
is a 403 (Meta's documented answer), and nothing is enqueued either way.
"""

from __future__ import annotations

import hmac
from urllib.parse import parse_qsl

from app.errors import InvalidPayload
from app.providers.recipe import RecipeVerifier
from app.providers.recipe_spec import Recipe
from app.providers.request import Forbidden, Inbound, Reply
from app.sources import ConfigError, SourceConfig, check_not_placeholder

MAX_CHALLENGE = 256
RECIPE = Recipe.model_validate(
    {
        "signature_header": "X-Hub-Signature-256",
        "signature_prefix": "sha256=",
        "id": "digest",
        "type": "json:object",
    }
)


def echo(challenge: str | None) -> Reply:
    """The challenge back as text; `nosniff`, so a browser never renders what we reflect."""
    if not challenge or len(challenge) > MAX_CHALLENGE or not challenge.isprintable():
        raise InvalidPayload("missing or malformed challenge")
    return Reply.text(challenge, ("X-Content-Type-Options", "nosniff"))


class MetaVerifier(RecipeVerifier):
    provider = "meta"
    preset = RECIPE

    def __init__(self, source: SourceConfig) -> None:
        super().__init__(source)
        variable = source.variable_name("WEBHOOK_VERIFY_TOKEN_")
        token = source.variable("WEBHOOK_VERIFY_TOKEN_")
        if not token:
            raise ConfigError(
                f"{variable} is not set: Meta's GET verification needs the verify token "
                "you enter next to the callback URL"
            )
        check_not_placeholder(variable, token)
        self.verify_token = token.encode()

    def handshake(self, request: Inbound) -> Reply:
        query = dict(parse_qsl(request.query, keep_blank_values=True))
        given = query.get("hub.verify_token", "").encode()
        if not hmac.compare_digest(given, self.verify_token):
            raise Forbidden("verify token does not match")
        if query.get("hub.mode") != "subscribe":
            raise Forbidden("hub.mode must be subscribe")
        return echo(query.get("hub.challenge"))
