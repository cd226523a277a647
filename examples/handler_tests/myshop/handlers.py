"""The project's handlers, loaded by the worker with WEBHOOK_HANDLERS=myshop.handlers, and
tested by tests/test_handlers.py."""

from __future__ import annotations

from typing import Any

from workers import Event, PermanentError, handler

# Stand-ins for the project's database.
PAID: dict[str, int] = {}
ORDERS: dict[int, dict[str, Any]] = {}


@handler("stripe", "invoice.paid")
def record_payment(event: Event) -> None:
    invoice = event.payload["data"]["object"]  # Stripe's envelope: the invoice
    if "amount_paid" not in invoice:
        raise PermanentError("an invoice without amount_paid")  # dead-lettered at once
    PAID[invoice["id"]] = invoice["amount_paid"]


@handler("stripe", "*")
def audit(event: Event) -> None:
    """Every Stripe event, after the handlers of its type."""


@handler("shop", "orders/updated", entity="id", version="updated_at")
def sync_order(event: Event) -> None:
    order = event.payload  # Shopify's body is the order itself
    ORDERS[order["id"]] = {**order, "shop": event.headers["x-shopify-shop-domain"]}
