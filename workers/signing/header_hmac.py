"""Signers of the schemes that put an HMAC (or, for GitLab, the shared token) in a header.

Each builds its provider's envelope around the event, as the provider sends it: a minimal
body a handler would read, the provider's delivery headers, the id, type and timestamp.
`event.data` (None keeps the sample) replaces the provider's event object:

| provider | `event.data` replaces | the id the receiver answers with |
|---|---|---|
| `hmac` | the body, under `type` (`id` and `created` too, unless the data sets them) | body `id` |
| `stripe` | `data.object` | body `id` |
| `github` | the whole payload | `X-GitHub-Delivery` |
| `shopify` | the whole body (the order, product...) | `X-Shopify-Event-Id` |
| `slack` | the inner `event` (its `type` is the event type) | body `event_id` (1) |
| `paddle` | `data` | body `event_id` |
| `standard` | `data` | `webhook-id` |
| `gitlab` | the whole payload | `Idempotency-Key` |
| `meta` | `entry[0].changes[0].value` | digest |
| `twitch` | `event` | `Twitch-Eventsub-Message-Id` |
| `zoom` | `payload.object` | digest (1) |
| `woocommerce` | the whole body (the order, product...) | `X-WC-Webhook-Delivery-ID` |
| `dropbox` | the whole body (`list_folder`, `delta`) | digest |
| `xero` | `events[0]` | digest (the event id sets the body's `entropy`) |

The event id lands where the provider puts its id: that body field or header. Only
`hmac`'s data holds that place (its `id`): an id of its own there stays as given and is
the event id, which an id given must equal (`base.own_id`); in the others the data's own
`id` is data (an order's, a subscription's), never the event's. *Digest*
is `sha256:` + the hex SHA-256 of the body, for the providers that send no id: there the
event id shapes the sample (its ids are derived from it) and the body holds no clock, so
the same event id gives the same body (a duplicate) and another id another body.
(1) Slack's `url_verification` and Zoom's `endpoint.url_validation` are answered with
their challenge and queue nothing: no id (`""`).

Where the data is the whole body, the body is the data: two event ids with the same data
are then one event to the receiver, which dedupes GitHub, Shopify, GitLab and WooCommerce
by their signed bytes too (their ids travel unsigned). The same holds for Meta, Zoom and
Dropbox, whose envelopes have no place of their own for an id (Xero's has: `entropy`).
An empty type is the provider's usual one (`defaults.DEFAULT_TYPE`); Dropbox's and Xero's types
are fixed (`notification`, `events`): any other is refused.

The signers, by where the id is: in the signed body (`hmac` here; Stripe, Slack and
Paddle in `header_hmac_body_ids`), a signed header (Standard Webhooks and Twitch in
`header_hmac_signed_ids`), an unsigned header (GitHub and GitLab in `header_hmac_git`,
Shopify and WooCommerce in `header_hmac_shop`), or nowhere: the body's digest (Meta, Zoom,
Dropbox and Xero in `header_hmac_digest_ids`).
"""

from __future__ import annotations

from app.settings import SourceConfig
from workers.signing import (
    header_hmac_body_ids,
    header_hmac_digest_ids,
    header_hmac_git,
    header_hmac_shop,
    header_hmac_signed_ids,
)
from workers.signing.base import (
    EventToSign,
    Keys,
    SignedRequest,
    Signer,
    event_object,
    hex_hmac,
    own_id,
    own_type,
    require_secret,
)
from workers.signing.hmac_envelope import compact, number, type_or


def hmac_signature(key: bytes, body: bytes) -> str:
    return hex_hmac(key, body)


# --- hmac: our own scheme -----------------------------------------------------------------


def sign_hmac(source: SourceConfig, event: EventToSign, keys: Keys) -> SignedRequest:
    """`{"id", "type", "created", ...data}`; `created` is checked for freshness. The data's
    own `id` and `type`, when it has them, are the event's and stay as given."""
    key = require_secret(keys, source)
    data = event_object(event, "hmac", "the body (under id and type)")
    if data is None:
        order = f"ord_{number(event.event_id, 'hmac-order', 6)}"
        data = {"data": {"order_id": order, "total": "49.99", "currency": "USD"}}
    own = own_id(event, data.get("id"), "hmac", "id")
    kind = own_type(event, data.get("type"), "hmac") or type_or(event, "hmac")
    payload = {"id": event.event_id, "type": kind, "created": event.timestamp, **data}
    payload["type"] = kind  # over a `"type": null` too
    if own is None:
        payload["id"] = event.event_id  # over an `"id": null` too
    body = compact(payload)
    headers = {"Content-Type": "application/json", "X-Signature-256": hmac_signature(key, body)}
    return SignedRequest(event.url, headers, body, own or event.event_id)


SIGNERS: dict[str, Signer] = {
    "hmac": sign_hmac,
    **header_hmac_body_ids.SIGNERS,
    **header_hmac_signed_ids.SIGNERS,
    **header_hmac_git.SIGNERS,
    **header_hmac_shop.SIGNERS,
    **header_hmac_digest_ids.SIGNERS,
}

__all__ = ["SIGNERS", "hmac_signature", "sign_hmac"]
