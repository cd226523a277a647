"""GitHub: `X-Hub-Signature-256: sha256=<hex>`, HMAC-SHA256 of the raw body.

GitHub signs no timestamp: replays are stopped by the dedupe key alone, so keep the
source's dedupe window at least as long as GitHub's 3-day redelivery window. The event id
is `X-GitHub-Delivery` (unchanged on redelivery), the type `X-GitHub-Event`. Payloads must
be sent as `application/json` (the webhook's content type setting).
"""

from __future__ import annotations

from collections.abc import Mapping

from app.errors import InvalidPayload
from app.providers.header_auth import BodyHmacVerifier

HANDED_ON = (
    "x-github-delivery",
    "x-github-event",
    "x-github-hook-id",
    "x-github-hook-installation-target-id",
    "x-github-hook-installation-target-type",
)


class GitHubVerifier(BodyHmacVerifier):
    provider = "github"
    signature_header, signature_prefix = "X-Hub-Signature-256", "sha256="
    id_headers, id_label = ("x-github-delivery",), "X-GitHub-Delivery"
    type_header = "x-github-event"
    handed_on = HANDED_ON

    def authenticate(self, body: bytes, headers: Mapping[str, str]) -> None:
        super().authenticate(body, headers)
        # Only once signed: an unsigned request is a 401 whatever its content type.
        if headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            raise InvalidPayload("set the GitHub webhook's content type to application/json")
