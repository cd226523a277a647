"""`gitlab`: `X-Gitlab-Token`, the secret token of the webhook, sent as is.

GitLab signs nothing by default: the token proves the sender knows it, and is compared in
constant time with every configured secret. The id is `Idempotency-Key` (GitLab 17.4+,
kept on retries), else `X-Gitlab-Event-UUID`, else the body's SHA-256; the type is
`X-Gitlab-Event` (`Push Hook`, `Merge Request Hook`...).
"""

from __future__ import annotations

from collections.abc import Mapping

from app.errors import InvalidSignature
from app.providers.base import event_id_from, header
from app.providers.fields import body_digest, first_header
from app.providers.header_auth import HeaderAuthVerifier
from app.providers.signatures import any_signature_matches

HANDED_ON = (
    "x-gitlab-event",
    "x-gitlab-instance",
    "x-gitlab-webhook-uuid",
    "x-gitlab-event-uuid",
    "idempotency-key",
)


class GitLabVerifier(HeaderAuthVerifier):
    provider = "gitlab"
    type_header = "x-gitlab-event"
    handed_on = HANDED_ON

    def authenticate(self, body: bytes, headers: Mapping[str, str]) -> None:
        # A shared token, not a signature: compared as sent with every configured secret.
        given = header(headers, "x-gitlab-token").encode()
        if not any_signature_matches(self.keys, [given]):
            raise InvalidSignature("X-Gitlab-Token does not match")

    def event_id(self, body: bytes, headers: Mapping[str, str]) -> str:
        event_id = first_header(headers, ("idempotency-key", "x-gitlab-event-uuid"))
        return event_id_from(event_id or body_digest(body), "Idempotency-Key")
