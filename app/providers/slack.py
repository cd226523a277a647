"""Slack (Events API): `X-Slack-Signature: v0=<hex>` and `X-Slack-Request-Timestamp`.

The signed string is `"v0:{timestamp}:{raw body}"`, HMAC-SHA256 in hex with the signing
secret; the timestamp must be within the tolerance both ways. The event id is the body's
`event_id`; the type is the inner `event.type` of an `event_callback` (`message`,
`app_mention`...), else the outer `type`. Slack's URL check (`url_verification`) is
answered with its challenge, after verification, and nothing is enqueued.
"""

from __future__ import annotations

from typing import Any

from app.errors import InvalidPayload
from app.providers.base import event_type_from
from app.providers.recipe_spec import Recipe
from app.providers.request import Inbound, Reply
from app.providers.timestamped import TimestampedVerifier

RECIPE = Recipe.model_validate(
    {
        "signature_header": "X-Slack-Signature",
        "signature_prefix": "v0=",
        "signed": "v0:{timestamp}:{body}",
        "timestamp": "header:X-Slack-Request-Timestamp",
        "id": "json:event_id",
        # An event_callback's; the verifier reads any other's outer `type` (`event_type`).
        "type": "json:event.type",
        "headers": ["x-slack-retry-num", "x-slack-retry-reason", "x-slack-request-timestamp"],
    }
)


class SlackVerifier(TimestampedVerifier):
    provider = "slack"
    preset = RECIPE

    def handshake_reply(self, request: Inbound, payload: Any, key: bytes) -> Reply | None:
        if payload.get("type") != "url_verification":
            return None
        challenge = payload.get("challenge")
        if not isinstance(challenge, str):
            raise InvalidPayload("url_verification without a challenge")
        return Reply.json({"challenge": challenge})

    def event_type(self, request: Inbound, payload: Any) -> str:
        outer, inner = payload.get("type"), payload.get("event")
        if outer == "event_callback" and isinstance(inner, dict):
            return event_type_from(inner.get("type"))
        return event_type_from(outer)
