"""Signers of the schemes whose id is a header they sign with the timestamp and the body:
Standard Webhooks (`{id}.{timestamp}.{body}`, signed from its verifier's recipe, as
`recipe_signing.py` signs every recipe) and Twitch EventSub (`{id}{timestamp}{body}`).
What `event.data` replaces for each: the table in `header_hmac`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from app.providers import standard
from app.settings import SourceConfig
from workers.signing.base import (
    EventToSign,
    Keys,
    SignedRequest,
    Signer,
    event_object,
    header_value,
    hex_hmac,
    require_secret,
)
from workers.signing.envelope import Envelope, iso
from workers.signing.hmac_envelope import compact, number, token, type_or, uuid_id
from workers.signing.recipe_signing import sign_with_recipe


def twitch_signature(key: bytes, message_id: str, stamp: str, body: bytes) -> str:
    return "sha256=" + hex_hmac(key, f"{message_id}{stamp}".encode() + body)


# --- Standard Webhooks (Svix and others) ----------------------------------------------------


def sign_standard(source: SourceConfig, event: EventToSign, keys: Keys) -> SignedRequest:
    event = replace(event, event_type=type_or(event, "standard"))
    data = event_object(event, "standard", "data")
    resource = event.event_type.partition(".")[0] or "event"
    sample = {"id": f"{resource}_" + token(event.event_id, "standard", 20), "object": resource}
    payload = {
        "type": event.event_type,
        "timestamp": iso(event.timestamp, f".{number(event.event_id, 'standard-us', 6)}"),
        "data": sample if data is None else data,
    }
    # The `webhook-*` family, as the standard names its headers.
    recipe = standard.RECIPES[standard.FAMILIES[0]]
    return sign_with_recipe(recipe, "standard", source, event, keys, Envelope(payload))


# --- Twitch EventSub --------------------------------------------------------------------------

TWITCH_BROADCASTER = {
    "broadcaster_user_id": "141981764",
    "broadcaster_user_login": "webhooksdev",
    "broadcaster_user_name": "WebhooksDev",
}
TWITCH_VIEWER = {"user_id": "723140597", "user_login": "cool_viewer", "user_name": "Cool_Viewer"}


def twitch_event(event: EventToSign, kind: str) -> tuple[str, dict[str, Any]]:
    """The subscription type's version, and a sample `event` of that type."""
    when = iso(event.timestamp, f".{number(event.event_id, 'twitch-at', 9)}")
    if kind == "channel.follow":
        return "2", {**TWITCH_VIEWER, **TWITCH_BROADCASTER, "followed_at": when}
    if kind == "stream.online":
        stream = {"id": str(number(event.event_id, "twitch-stream", 11)), **TWITCH_BROADCASTER}
        return "1", {**stream, "type": "live", "started_at": when}
    if kind == "channel.subscribe":
        return "1", {**TWITCH_VIEWER, **TWITCH_BROADCASTER, "tier": "1000", "is_gift": False}
    if kind == "channel.cheer":
        cheer = {"is_anonymous": False, **TWITCH_VIEWER, **TWITCH_BROADCASTER}
        return "1", {**cheer, "message": "Cheer100 great stream", "bits": 100}
    return "1", dict(TWITCH_BROADCASTER)


def sign_twitch(source: SourceConfig, event: EventToSign, keys: Keys) -> SignedRequest:
    key = require_secret(keys, source)
    message_id = header_value(event.event_id, "twitch", "Twitch-Eventsub-Message-Id")
    kind = header_value(type_or(event, "twitch"), "twitch", "Twitch-Eventsub-Subscription-Type")
    data = event_object(event, "twitch", "event")
    version, sample = twitch_event(event, kind)
    condition = {"broadcaster_user_id": TWITCH_BROADCASTER["broadcaster_user_id"]}
    if kind == "channel.follow":  # version 2 needs a moderator too
        condition["moderator_user_id"] = condition["broadcaster_user_id"]
    subscription = {
        "id": uuid_id(kind, "twitch-subscription"),  # one subscription per type
        "status": "enabled",
        "type": kind,
        "version": version,
        "cost": 0,
        "condition": condition,
        "transport": {"method": "webhook", "callback": event.url},
        "created_at": iso(event.timestamp - 86400, ".000000000"),
    }
    body = compact({"subscription": subscription, "event": sample if data is None else data})
    # RFC 3339 with nanoseconds, as Twitch writes it; signed as written.
    stamp = iso(event.timestamp, f".{number(event.event_id, 'twitch-stamp', 9)}")
    headers = {
        "Content-Type": "application/json",
        "Twitch-Eventsub-Message-Id": message_id,
        "Twitch-Eventsub-Message-Retry": "0",
        "Twitch-Eventsub-Message-Type": "notification",
        "Twitch-Eventsub-Message-Signature": twitch_signature(key, message_id, stamp, body),
        "Twitch-Eventsub-Message-Timestamp": stamp,
        "Twitch-Eventsub-Subscription-Type": kind,
        "Twitch-Eventsub-Subscription-Version": version,
    }
    return SignedRequest(event.url, headers, body, message_id)


SIGNERS: dict[str, Signer] = {"standard": sign_standard, "twitch": sign_twitch}
