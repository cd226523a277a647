"""`woocommerce`: `X-WC-Webhook-Signature: <base64>`, HMAC-SHA256 of the raw body.

The id is `X-WC-Webhook-Delivery-ID`, the type `X-WC-Webhook-Topic` (`order.created`).
WooCommerce decodes HTML entities in the secret before signing: enter it as WooCommerce
shows it, decoded (`&` rather than `&amp;`).

Handshake: when a webhook is saved or activated WooCommerce posts `webhook_id=<n>` as a
form, unsigned, and refuses to save unless the answer is 200. That exact body without a
signature header is answered 200 and enqueues nothing; any other unsigned body is a 401.
"""

from __future__ import annotations

import re

from app.providers.base import Delivery
from app.providers.recipe import RecipeVerifier
from app.providers.recipe_spec import Recipe
from app.providers.request import Inbound, Reply

PING = re.compile(rb"webhook_id=[0-9]{1,20}")
RECIPE = Recipe.model_validate(
    {
        "signature_header": "X-WC-Webhook-Signature",
        "encoding": "base64",
        # Unsigned (id_signed False): the delivery id is a header, and only the body is signed.
        "id": ["header:X-WC-Webhook-Delivery-ID", "digest"],
        "type": "header:X-WC-Webhook-Topic",
        "headers": [
            "x-wc-webhook-source",
            "x-wc-webhook-topic",
            "x-wc-webhook-resource",
            "x-wc-webhook-event",
            "x-wc-webhook-id",
            "x-wc-webhook-delivery-id",
        ],
    }
)


class WooCommerceVerifier(RecipeVerifier):
    provider = "woocommerce"
    preset = RECIPE

    def check(self, request: Inbound) -> Delivery:
        if "x-wc-webhook-signature" not in request.headers and PING.fullmatch(request.body):
            return Delivery(event_id="", event_type="ping", reply=Reply.empty())
        return super().check(request)
