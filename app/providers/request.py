"""What a verifier sees of a request (`Inbound`) and what it may answer instead of the
usual `{"status": ..., "id": ...}` (`Reply`).

Most schemes sign the body alone, but some sign the URL the provider called (Twilio,
Square, HubSpot) or the method (HubSpot), some handshakes arrive as GET requests with a
query string (Meta, Dropbox, Braintree), and some providers want an answer that is not our
JSON (Twitch's challenge as text, Zoom's token JSON, Adyen's `[accepted]`, TwiML).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from app.errors import WebhookError


@dataclass(frozen=True, slots=True)
class Inbound:
    """One request as the provider sent it."""

    method: str
    # The URL the provider called (WEBHOOK_PUBLIC_URL + path + query behind a proxy).
    # Built only for verifiers that sign it (`Verifier.signs_url`); "" for the others.
    url: str
    # The raw query string, exactly as sent (no `?`).
    query: str
    headers: Mapping[str, str]
    body: bytes
    now: float


@dataclass(frozen=True, slots=True)
class Reply:
    """An answer the provider expects, sent as is."""

    body: bytes = b""
    media_type: str = "application/json"
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()

    @staticmethod
    def json(value: object) -> Reply:
        return Reply(json.dumps(value, separators=(",", ":")).encode())

    @staticmethod
    def text(value: str, *headers: tuple[str, str]) -> Reply:
        return Reply(value.encode(), "text/plain; charset=utf-8", headers=headers)

    @staticmethod
    def empty(status: int = 200) -> Reply:
        return Reply(b"", "text/plain; charset=utf-8", status)


class MethodNotAllowed(WebhookError):
    """A GET to a source whose provider has no GET handshake."""

    status_code = 405
    reason = "method_not_allowed"


class Forbidden(WebhookError):
    """A handshake whose token does not match (Meta documents a 403 for it)."""

    status_code = 403
    reason = "forbidden"
