"""Slack (Events API): `X-Slack-Signature: v0=<hex>` and `X-Slack-Request-Timestamp`.

The signed string is `"v0:{timestamp}:{raw body}"`, HMAC-SHA256 in hex with the signing
secret; the timestamp must be within the tolerance both ways. The event id is the body's
`event_id`; the type is the inner `event.type` of an `event_callback` (`message`,
`app_mention`...), else the outer `type`. Slack's URL check (`url_verification`) is
answered with its challenge, after verification, and nothing is enqueued.
"""

from __future__ import annotations

from collections.abc import Mapping

from app.errors import InvalidPayload, InvalidSignature
from app.providers.base import (
    Delivery,
    Verifier,
    check_window,
    event_id_from,
    event_type_from,
    header,
    parse_hex,
    parse_timestamp,
    pick_headers,
)
from app.providers.json_body import parse_json_object
from app.providers.request import Reply
from app.providers.signatures import check_hmac

HANDED_ON = ("x-slack-retry-num", "x-slack-retry-reason", "x-slack-request-timestamp")


class SlackVerifier(Verifier):
    provider = "slack"

    def verify(self, body: bytes, headers: Mapping[str, str], now: float) -> Delivery:
        timestamp = parse_timestamp(header(headers, "x-slack-request-timestamp"))
        version, _, digest = header(headers, "x-slack-signature").partition("=")
        given = parse_hex(digest) if version == "v0" else None
        if given is None or len(given) != 32:
            raise InvalidSignature("malformed X-Slack-Signature header")
        signed = f"v0:{timestamp}:".encode() + body
        check_hmac(self.keys, signed, [given])
        check_window(timestamp, now, self.source.tolerance, future_too=True)
        payload = parse_json_object(body)
        outer_type = payload.get("type")
        if outer_type == "url_verification":
            challenge = payload.get("challenge")
            if not isinstance(challenge, str):
                raise InvalidPayload("url_verification without a challenge")
            reply = Reply.json({"challenge": challenge})
            return Delivery(event_id="", event_type=outer_type, reply=reply)
        inner = payload.get("event")
        event_type = (
            inner.get("type")
            if outer_type == "event_callback" and isinstance(inner, dict)
            else outer_type
        )
        return Delivery(
            event_id=event_id_from(payload.get("event_id"), "body 'event_id'"),
            event_type=event_type_from(event_type),
            headers=pick_headers(headers, HANDED_ON),
        )
