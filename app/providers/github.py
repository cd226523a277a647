"""GitHub: `X-Hub-Signature-256: sha256=<hex>`, HMAC-SHA256 of the raw body.

GitHub signs no timestamp: replays are stopped by the dedupe key alone, so keep the
source's dedupe window at least as long as GitHub's 3-day redelivery window. The event id
is `X-GitHub-Delivery` (unchanged on redelivery), the type `X-GitHub-Event`. Payloads must
be sent as `application/json` (the webhook's content type setting).
"""

from __future__ import annotations

from collections.abc import Mapping

from app.errors import InvalidPayload, InvalidSignature
from app.providers.base import (
    Delivery,
    Verifier,
    check_hmac,
    event_id_from,
    event_type_from,
    header,
    parse_hex,
    pick_headers,
)
from app.providers.json_body import parse_json_object

HANDED_ON = (
    "x-github-delivery",
    "x-github-event",
    "x-github-hook-id",
    "x-github-hook-installation-target-id",
    "x-github-hook-installation-target-type",
)


class GitHubVerifier(Verifier):
    provider = "github"
    # The id is the X-GitHub-Delivery header, which the signature (body only) does not cover.
    id_signed = False

    def verify(self, body: bytes, headers: Mapping[str, str], now: float) -> Delivery:
        value = header(headers, "x-hub-signature-256")
        scheme, _, digest = value.partition("=")
        given = parse_hex(digest) if scheme == "sha256" else None
        if given is None or len(given) != 32:
            raise InvalidSignature("malformed X-Hub-Signature-256 header")
        check_hmac(self.keys, body, [given])
        if headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            raise InvalidPayload("set the GitHub webhook's content type to application/json")
        parse_json_object(body)
        return Delivery(
            event_id=event_id_from(headers.get("x-github-delivery"), "X-GitHub-Delivery"),
            event_type=event_type_from(headers.get("x-github-event")),
            headers=pick_headers(headers, HANDED_ON),
        )
