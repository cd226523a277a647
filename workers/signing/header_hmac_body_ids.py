"""Signers of the header HMACs whose id is in the body they sign, with a timestamp:
Stripe (`{t}.{body}`), Slack (`v0:{ts}:{body}`) and Paddle (`{ts}:{body}`). Each builds its
provider's envelope; the rest (where the id, type and timestamp go, what is signed, the
signature header) is its verifier's recipe's (`recipe_signing.py`). What `event.data`
replaces for each: the table in `header_hmac`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from app.providers import paddle, slack, stripe
from app.settings import SourceConfig
from workers.signing.base import EventToSign, Keys, SignedRequest, Signer, event_object
from workers.signing.envelope import Envelope, iso
from workers.signing.hmac_envelope import number, token, type_or
from workers.signing.recipe_signing import sign_with_recipe

# Paddle's ids: a prefix, `_01`, then lower-case Crockford base32 (ULIDs).
ULID = "0123456789abcdefghjkmnpqrstvwxyz"


# --- Stripe ------------------------------------------------------------------------------

STRIPE_CUSTOMER = "cus_R8pLw2XkQz41Tn"
STRIPE_PREFIXES = {
    "payment_intent": "pi",
    "charge": "ch",
    "checkout.session": "cs_test",
    "customer": "cus",
    "customer.subscription": "sub",
    "invoice": "in",
    "refund": "re",
    "product": "prod",
    "price": "price",
    "payout": "po",
}


def stripe_object(event: EventToSign, kind: str) -> dict[str, Any]:
    """A small object of the type's resource (`customer.subscription.updated`: a subscription)."""
    resource, _, action = kind.rpartition(".")
    name = resource.rpartition(".")[2]
    prefix = STRIPE_PREFIXES.get(resource, name[:4] or "obj")
    head = {"id": f"{prefix}_" + token(event.event_id, "stripe", 24), "object": name or "event"}
    if resource == "payment_intent":
        done = action == "succeeded"
        status = "succeeded" if done else "canceled" if action == "canceled" else "requires_action"
        return {
            **head,
            "amount": 2000,
            "amount_received": 2000 if done else 0,
            "currency": "usd",
            "customer": STRIPE_CUSTOMER,
            "status": status,
            "metadata": {"order_id": "1042"},
        }
    if resource == "checkout.session":
        return {
            **head,
            "object": "checkout.session",
            "amount_total": 2000,
            "currency": "usd",
            "customer": STRIPE_CUSTOMER,
            "client_reference_id": "order-1042",
            "mode": "payment",
            "payment_status": "paid",
            "status": "complete",
        }
    if resource == "customer.subscription":
        price = {"id": "price_1QfWm3Lkd8Nx2Pq7", "unit_amount": 1500, "currency": "usd"}
        item = {"id": "si_" + token(event.event_id, "si", 14), "price": price, "quantity": 1}
        return {
            **head,
            "customer": STRIPE_CUSTOMER,
            "status": "canceled" if action == "deleted" else "active",
            "created": event.timestamp,
            "items": {"object": "list", "data": [item]},
            "cancel_at_period_end": False,
        }
    if resource == "invoice":
        return {
            **head,
            "customer": STRIPE_CUSTOMER,
            "amount_due": 1500,
            "amount_paid": 1500 if action == "paid" else 0,
            "currency": "usd",
            "status": "paid" if action == "paid" else "open",
        }
    if resource == "customer":
        return {**head, "id": STRIPE_CUSTOMER, "email": "jenny@example.com", "name": "Jenny Rosen"}
    return head


def sign_stripe(source: SourceConfig, event: EventToSign, keys: Keys) -> SignedRequest:
    event = replace(event, event_type=type_or(event, "stripe"))
    obj = event_object(event, "stripe", "data.object")
    envelope = {
        "id": event.event_id,
        "object": "event",
        "api_version": "2024-06-20",
        "created": event.timestamp,
        "data": {"object": stripe_object(event, event.event_type) if obj is None else obj},
        "livemode": False,
        "pending_webhooks": 1,
        "request": {"id": None, "idempotency_key": None},
        "type": event.event_type,
    }
    agent = {"User-Agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)"}
    # Stripe indents its event bodies; its `whsec_...` secret is used as is.
    signed = Envelope(envelope, agent, indent=2)
    return sign_with_recipe(stripe.RECIPE, "stripe", source, event, keys, signed)


# --- Slack (Events API) -------------------------------------------------------------------

SLACK_TEAM, SLACK_APP, SLACK_CHANNEL = "T07Q9D2A1HJ", "A07R1PZ4W3E", "C07R2B8K5NZ"
SLACK_USER, SLACK_BOT = "U07QX3K1M2D", "U07R5BOT9QH"
# The deprecated verification token Slack still sends in every body (not a secret here).
SLACK_TOKEN = "Jhj5dZrVaK7ZwHHjRyZWjbDl"  # noqa: S105


def slack_event(event: EventToSign, kind: str) -> dict[str, Any]:
    ts = f"{event.timestamp}.{number(event.event_id, 'slack-ts', 6)}"
    if kind == "app_mention":
        text = f"<@{SLACK_BOT}> is the deploy done?"
        where = {"ts": ts, "channel": SLACK_CHANNEL, "event_ts": ts}
        return {"type": kind, "user": SLACK_USER, "text": text, **where}
    if kind == "message":
        return {
            "type": kind,
            "channel": SLACK_CHANNEL,
            "user": SLACK_USER,
            "text": "The deploy finished.",
            "ts": ts,
            "event_ts": ts,
            "channel_type": "channel",
        }
    if kind in ("reaction_added", "reaction_removed"):
        item = {"type": "message", "channel": SLACK_CHANNEL, "ts": ts}
        return {"type": kind, "user": SLACK_USER, "reaction": "eyes", "item": item, "event_ts": ts}
    return {"type": kind, "user": SLACK_USER, "event_ts": ts}


def sign_slack(source: SourceConfig, event: EventToSign, keys: Keys) -> SignedRequest:
    event = replace(event, event_type=type_or(event, "slack"))
    kind = event.event_type
    # The timestamp as Slack spells its header (the recipe sets its value).
    headers = {
        "User-Agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
        "X-Slack-Request-Timestamp": "",
    }
    if kind == "url_verification":  # Slack's URL check, answered with its challenge
        data = event_object(event, "slack", "the url_verification body")
        challenge = token(event.event_id, "slack-challenge", 52)
        check = {"token": SLACK_TOKEN, "challenge": challenge, **(data or {}), "type": kind}
        envelope = Envelope(check, headers)
        return sign_with_recipe(
            slack.RECIPE, "slack", source, event, keys, envelope, handshake=True
        )
    data = event_object(event, "slack", "the inner event")
    bot = {"team_id": SLACK_TEAM, "user_id": SLACK_BOT, "is_bot": True}
    payload = {
        "token": SLACK_TOKEN,
        "team_id": SLACK_TEAM,
        "api_app_id": SLACK_APP,
        "event": slack_event(event, kind) if data is None else {**data, "type": kind},
        "type": "event_callback",
        "event_id": event.event_id,
        "event_time": event.timestamp,
        "authorizations": [bot],
        "is_ext_shared_channel": False,
    }
    return sign_with_recipe(slack.RECIPE, "slack", source, event, keys, Envelope(payload, headers))


# --- Paddle Billing ------------------------------------------------------------------------

PADDLE_CUSTOMER = "ctm_01jd4kx8q3w2m7ep5rzn6tbvyc"
PADDLE_PRICE = {"id": "pri_01jd4m2a7rfk3v9yq8x5wzt6hn", "product_id": "pro_01jd4m0c5x2v8kq"}
PADDLE_PREFIXES = {"subscription": "sub", "transaction": "txn", "customer": "ctm"}
PADDLE_PREFIXES |= {"adjustment": "adj", "address": "add", "business": "biz", "product": "pro"}


def paddle_id(event: EventToSign, prefix: str) -> str:
    return f"{prefix}_01j" + token(event.event_id, prefix, 23, ULID)


def paddle_data(event: EventToSign, kind: str) -> dict[str, Any]:
    resource, _, action = kind.partition(".")
    head = {"id": paddle_id(event, PADDLE_PREFIXES.get(resource, resource[:3] or "evt"))}
    if resource == "subscription":
        return {
            **head,
            "status": action if action in ("canceled", "paused", "past_due") else "active",
            "customer_id": PADDLE_CUSTOMER,
            "currency_code": "USD",
            "billing_cycle": {"interval": "month", "frequency": 1},
            "items": [{"price": PADDLE_PRICE, "quantity": 1, "status": "active"}],
            "custom_data": {"account_id": "1042"},
        }
    if resource == "transaction":
        return {
            **head,
            "status": action if action in ("paid", "past_due", "canceled") else "completed",
            "customer_id": PADDLE_CUSTOMER,
            "currency_code": "USD",
            "origin": "web",
            "details": {"totals": {"subtotal": "1500", "tax": "0", "total": "1500"}},
            "items": [{"price": PADDLE_PRICE, "quantity": 1}],
        }
    if resource == "customer":
        return {"id": PADDLE_CUSTOMER, "email": "jane@example.com", "name": "Jane Doe"}
    return head


def sign_paddle(source: SourceConfig, event: EventToSign, keys: Keys) -> SignedRequest:
    event = replace(event, event_type=type_or(event, "paddle"))
    data = event_object(event, "paddle", "data")
    payload = {
        "event_id": event.event_id,
        "event_type": event.event_type,
        "occurred_at": iso(event.timestamp, f".{number(event.event_id, 'paddle-us', 6)}"),
        "notification_id": paddle_id(event, "ntf"),
        "data": paddle_data(event, event.event_type) if data is None else data,
    }
    # The `pdl_ntfset_...` secret is used as is.
    return sign_with_recipe(paddle.RECIPE, "paddle", source, event, keys, Envelope(payload))


SIGNERS: dict[str, Signer] = {"stripe": sign_stripe, "slack": sign_slack, "paddle": sign_paddle}
