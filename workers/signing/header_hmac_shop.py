"""Signers of Shopify and WooCommerce: `X-Shopify-Hmac-Sha256` and `X-WC-Webhook-Signature`,
the base64 HMAC-SHA256 of the body (the shop's resource), whose ids are headers they do
not sign. What `event.data` replaces for each: the table in `header_hmac`.

The receiver dedupes these by their signed bytes too, so each sample derives its own ids
(an order number) from the event id: another event id is another body, another event.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from app.settings import SourceConfig
from workers.signing.base import (
    EventToSign,
    Keys,
    SignedRequest,
    Signer,
    b64_hmac,
    event_object,
    header_value,
    require_secret,
)
from workers.signing.envelope import iso
from workers.signing.hmac_envelope import compact, number, php_json, token, type_or, uuid_id

# --- Shopify ---------------------------------------------------------------------------------

SHOPIFY_SHOP = "webhooks-dev.myshopify.com"
SHOPIFY_CUSTOMER = {"id": 7390211342417, "email": "jane@example.com", "first_name": "Jane"}


def shopify_resource(event: EventToSign, topic: str) -> dict[str, Any]:
    """The topic's resource, as Shopify's REST representation (`orders/create`: an order)."""
    resource = topic.partition("/")[0]
    name = "".join(part.title() for part in resource.removesuffix("s").split("_"))
    ident = number(event.event_id, "shopify", 13)
    head = {"id": ident, "admin_graphql_api_id": f"gid://shopify/{name or 'Shop'}/{ident}"}
    updated = iso(event.timestamp).replace("Z", "+00:00")
    if resource == "orders":
        line = {"id": ident + 1, "product_id": 8204561235281, "title": "Webhook T-shirt"}
        line |= {"quantity": 1, "price": "59.00", "sku": "TEE-M"}
        return {
            **head,
            "name": f"#{number(event.event_id, 'shopify-name', 4)}",
            "email": SHOPIFY_CUSTOMER["email"],
            "currency": "USD",
            "total_price": "59.00",
            "financial_status": "paid",
            "fulfillment_status": None,
            "customer": SHOPIFY_CUSTOMER,
            "line_items": [line],
            "updated_at": updated,
        }
    if resource == "products":
        variant = {"id": ident + 1, "sku": "TEE-M", "price": "59.00", "inventory_quantity": 12}
        product = {"title": "Webhook T-shirt", "handle": "webhook-t-shirt", "status": "active"}
        return {**head, **product, "variants": [variant], "updated_at": updated}
    if resource == "customers":
        customer = {"email": "jane@example.com", "first_name": "Jane", "last_name": "Doe"}
        return {**head, **customer, "state": "enabled", "updated_at": updated}
    if resource in ("app", "shop"):
        return {"id": ident, "name": "Webhooks Dev", "myshopify_domain": SHOPIFY_SHOP}
    return {**head, "updated_at": updated}


def sign_shopify(source: SourceConfig, event: EventToSign, keys: Keys) -> SignedRequest:
    key = require_secret(keys, source)  # the app's client secret, as is
    event_id = header_value(event.event_id, "shopify", "X-Shopify-Event-Id")
    topic = header_value(type_or(event, "shopify"), "shopify", "X-Shopify-Topic")
    data = event_object(event, "shopify", "the body")
    body = compact(shopify_resource(event, topic) if data is None else data)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "Shopify-Captain-Hook",
        "X-Shopify-Topic": topic,
        "X-Shopify-Hmac-Sha256": b64_hmac(key, body),
        "X-Shopify-Shop-Domain": SHOPIFY_SHOP,
        "X-Shopify-API-Version": "2025-01",
        "X-Shopify-Webhook-Id": uuid_id(event.event_id, "shopify-webhook"),
        "X-Shopify-Event-Id": event_id,
        "X-Shopify-Triggered-At": iso(event.timestamp, f".{number(event.event_id, 'sh', 6)}"),
    }
    return SignedRequest(event.url, headers, body, event_id)


# --- WooCommerce -----------------------------------------------------------------------------


def woocommerce_resource(event: EventToSign, resource: str) -> dict[str, Any]:
    """The topic's resource, as WooCommerce's REST API (v3) represents it."""
    ident = number(event.event_id, "woocommerce", 4)
    local = datetime.fromtimestamp(event.timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    if resource == "order":
        line = {"id": ident + 1, "name": "Hoodie", "product_id": 31, "quantity": 1}
        return {
            "id": ident,
            "parent_id": 0,
            "status": "processing",
            "currency": "USD",
            "date_created": local,
            "date_created_gmt": local,
            "total": "45.00",
            "customer_id": 7,
            "order_key": "wc_order_" + token(event.event_id, "woocommerce-key", 13),
            "billing": {"first_name": "Jane", "last_name": "Doe", "email": "jane@example.com"},
            "payment_method": "stripe",
            "line_items": [{**line, "sku": "WOO-HOODIE", "total": "45.00"}],
        }
    if resource == "product":
        product = {"id": ident, "name": "Hoodie", "slug": "hoodie", "status": "publish"}
        return {**product, "sku": "WOO-HOODIE", "price": "45.00", "stock_status": "instock"}
    if resource == "customer":
        customer = {"id": ident, "email": "jane@example.com", "first_name": "Jane"}
        return {**customer, "last_name": "Doe", "role": "customer", "date_created": local}
    if resource == "coupon":
        return {"id": ident, "code": "spring10", "amount": "10.00", "discount_type": "percent"}
    return {"id": ident}


def sign_woocommerce(source: SourceConfig, event: EventToSign, keys: Keys) -> SignedRequest:
    key = require_secret(keys, source)  # as WooCommerce signs: HTML entities decoded
    delivery = header_value(event.event_id, "woocommerce", "X-WC-Webhook-Delivery-ID")
    topic = header_value(type_or(event, "woocommerce"), "woocommerce", "X-WC-Webhook-Topic")
    resource, _, action = topic.partition(".")
    data = event_object(event, "woocommerce", "the body")
    # WordPress's wp_json_encode: PHP's escapes (`\/`, `\u00e9`), as the bytes are signed.
    body = php_json(woocommerce_resource(event, resource) if data is None else data)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "WooCommerce/9.4.2 Hookshot (WordPress/6.7.1)",
        "X-WC-Webhook-Source": "https://shop.example.com/",
        "X-WC-Webhook-Topic": topic,
        "X-WC-Webhook-Resource": resource,
        "X-WC-Webhook-Event": action,
        "X-WC-Webhook-Signature": b64_hmac(key, body),
        "X-WC-Webhook-ID": "12",
        "X-WC-Webhook-Delivery-ID": delivery,
    }
    return SignedRequest(event.url, headers, body, delivery)


SIGNERS: dict[str, Signer] = {"shopify": sign_shopify, "woocommerce": sign_woocommerce}
