"""Shopify: `X-Shopify-Hmac-Sha256: <base64>`, HMAC-SHA256 of the raw body.

The key is the app's client secret. Shopify signs no timestamp (`X-Shopify-Triggered-At`
is handed to handlers, unsigned). The event id is `X-Shopify-Event-Id`, which Shopify's
docs name for ignoring duplicates (older API versions only send `X-Shopify-Webhook-Id`,
used then); the type is the topic, e.g. `orders/create`.
"""

from __future__ import annotations

from collections.abc import Mapping

from app.errors import InvalidSignature
from app.providers.base import (
    Delivery,
    Verifier,
    b64decode,
    check_hmac,
    event_id_from,
    event_type_from,
    header,
    pick_headers,
)
from app.providers.json_body import parse_json_object

HANDED_ON = (
    "x-shopify-topic",
    "x-shopify-shop-domain",
    "x-shopify-event-id",
    "x-shopify-webhook-id",
    "x-shopify-triggered-at",
    "x-shopify-api-version",
)


class ShopifyVerifier(Verifier):
    provider = "shopify"
    # The id is the X-Shopify-Event-Id (or -Webhook-Id) header; only the body is signed.
    id_signed = False

    def verify(self, body: bytes, headers: Mapping[str, str], now: float) -> Delivery:
        given = b64decode(header(headers, "x-shopify-hmac-sha256"))
        if given is None or len(given) != 32:
            raise InvalidSignature("malformed X-Shopify-Hmac-Sha256 header")
        check_hmac(self.keys, body, [given])
        parse_json_object(body)
        event_id = headers.get("x-shopify-event-id") or headers.get("x-shopify-webhook-id")
        return Delivery(
            event_id=event_id_from(event_id, "X-Shopify-Event-Id"),
            event_type=event_type_from(headers.get("x-shopify-topic")),
            headers=pick_headers(headers, HANDED_ON),
        )
