"""`gitlab`: `X-Gitlab-Token`, the secret token of the webhook, sent as is.

GitLab signs nothing by default: the token proves the sender knows it, and is compared in
constant time with every configured secret. The id is `Idempotency-Key` (GitLab 17.4+,
kept on retries), else `X-Gitlab-Event-UUID`, else the body's SHA-256; the type is
`X-Gitlab-Event` (`Push Hook`, `Merge Request Hook`...).
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from app.errors import InvalidSignature
from app.providers.base import (
    Delivery,
    Verifier,
    event_id_from,
    event_type_from,
    header,
    pick_headers,
)
from app.providers.fields import body_digest, first_header
from app.providers.json_body import parse_json_object

HANDED_ON = (
    "x-gitlab-event",
    "x-gitlab-instance",
    "x-gitlab-webhook-uuid",
    "x-gitlab-event-uuid",
    "idempotency-key",
)


class GitLabVerifier(Verifier):
    provider = "gitlab"
    # The id is the Idempotency-Key or X-Gitlab-Event-UUID header: GitLab signs nothing.
    id_signed = False

    def verify(self, body: bytes, headers: Mapping[str, str], now: float) -> Delivery:
        given = header(headers, "x-gitlab-token").encode()
        matched = False
        for key in self.keys:
            matched |= hmac.compare_digest(given, key)
        if not matched:
            raise InvalidSignature("X-Gitlab-Token does not match")
        parse_json_object(body)
        event_id = first_header(headers, ("idempotency-key", "x-gitlab-event-uuid"))
        return Delivery(
            event_id=event_id_from(event_id or body_digest(body), "Idempotency-Key"),
            event_type=event_type_from(headers.get("x-gitlab-event")),
            headers=pick_headers(headers, HANDED_ON),
        )
