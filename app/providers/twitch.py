"""`twitch` (EventSub over webhooks): `Twitch-Eventsub-Message-Signature: sha256=<hex>`.

The signed string is message id + timestamp header + raw body, HMAC-SHA256 with the
subscription's secret. Twitch says to refuse messages older than 10 minutes (the
timestamp is RFC 3339 with nanoseconds). The id is `Twitch-Eventsub-Message-Id` (kept on
resends), the type `Twitch-Eventsub-Subscription-Type`.

Handshake: a verified `webhook_callback_verification` message is answered with its
`challenge` as `text/plain`, and nothing is enqueued. `revocation` messages are events
(their message type is in `event.headers`).
"""

from __future__ import annotations

from typing import Any

from app.errors import InvalidPayload
from app.providers.fields import json_path
from app.providers.recipe import RecipeVerifier
from app.providers.recipe_spec import Recipe
from app.providers.request import Inbound, Reply

RECIPE = Recipe.model_validate(
    {
        "signature_header": "Twitch-Eventsub-Message-Signature",
        "signature_prefix": "sha256=",
        "signed": "{id}{timestamp}{body}",
        "timestamp": "header:Twitch-Eventsub-Message-Timestamp",
        "timestamp_unit": "iso8601",
        "tolerance": 600,
        "id": "header:Twitch-Eventsub-Message-Id",
        "type": ["header:Twitch-Eventsub-Subscription-Type", "json:subscription.type"],
        "headers": [
            "twitch-eventsub-message-id",
            "twitch-eventsub-message-type",
            "twitch-eventsub-message-retry",
            "twitch-eventsub-subscription-type",
            "twitch-eventsub-subscription-version",
        ],
    }
)


class TwitchVerifier(RecipeVerifier):
    provider = "twitch"
    preset = RECIPE

    def handshake_reply(self, request: Inbound, payload: Any, key: bytes) -> Reply | None:
        kind = request.headers.get("twitch-eventsub-message-type", "")
        if kind != "webhook_callback_verification":
            return None
        challenge = json_path(payload, "challenge")
        if not isinstance(challenge, str) or not challenge:
            raise InvalidPayload("webhook_callback_verification without a challenge")
        return Reply.text(challenge)
