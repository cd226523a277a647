"""Shopify: `X-Shopify-Hmac-Sha256: <base64>`, HMAC-SHA256 of the raw body.

The key is the app's client secret. Shopify signs no timestamp (`X-Shopify-Triggered-At`
is handed to handlers, unsigned). The event id is `X-Shopify-Event-Id`, which Shopify's
docs name for ignoring duplicates (older API versions only send `X-Shopify-Webhook-Id`,
used then); the type is the topic, e.g. `orders/create`.
"""

from __future__ import annotations

from app.providers.header_auth import BodyHmacVerifier
from app.providers.recipe_spec import Encoding

HANDED_ON = (
    "x-shopify-topic",
    "x-shopify-shop-domain",
    "x-shopify-event-id",
    "x-shopify-webhook-id",
    "x-shopify-triggered-at",
    "x-shopify-api-version",
)


class ShopifyVerifier(BodyHmacVerifier):
    provider = "shopify"
    signature_header, encoding = "X-Shopify-Hmac-Sha256", Encoding.BASE64
    id_headers = ("x-shopify-event-id", "x-shopify-webhook-id")
    id_label = "X-Shopify-Event-Id"
    type_header = "x-shopify-topic"
    handed_on = HANDED_ON
