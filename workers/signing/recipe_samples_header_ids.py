"""The envelopes of the presets whose event id is a header: signed with the body (Clerk and
Resend, Standard Webhooks under Svix's names: `svix-id`) or not (Linear, Razorpay,
Sentry). What `data` replaces in each: the table in `recipe_samples.py`.

Where the id header is not signed, the receiver also claims the signed body, so two events
need two bodies: the samples' objects take ids derived from the event id, and with `data`,
different data.
"""

from __future__ import annotations

from typing import Any

from workers.signing.base import EventToSign, SigningError
from workers.signing.envelope import (
    MILLIS,
    Envelope,
    derived,
    derived_number,
    derived_uuid,
    iso,
    object_or_sample,
)


def clerk(event: EventToSign) -> Envelope:
    ms, email = event.timestamp * 1000, "idn_" + derived(event.event_id, 24, "email")
    user = object_or_sample(
        event,
        "clerk",
        "the event's data",
        lambda: {
            "id": "user_" + derived(event.event_id, 24, "user"),
            "object": "user",
            "first_name": "Alice",
            "last_name": "Example",
            "email_addresses": [
                {"id": email, "object": "email_address", "email_address": "alice@example.com"}
            ],
            "primary_email_address_id": email,
            "created_at": ms,
            "updated_at": ms,
        },
    )
    body = {
        "data": user,
        "object": "event",
        "type": event.event_type,
        "timestamp": ms,
        "instance_id": "ins_" + derived("instance", 24),
    }
    return Envelope(body)


def linear(event: EventToSign) -> Envelope:
    when, number = iso(event.timestamp, MILLIS), derived_number(event.event_id, 3)
    data = object_or_sample(
        event,
        "linear",
        "the entity in data",
        lambda: {
            "id": derived_uuid(event.event_id, "issue"),
            "identifier": f"ENG-{number}",
            "number": number,
            "title": "Example issue",
            "priority": 2,
            "teamId": derived_uuid("team"),
            "createdAt": when,
            "updatedAt": when,
        },
    )
    body = {
        "action": "create",
        "actor": {"id": derived_uuid("actor"), "name": "Alice Example", "type": "user"},
        "createdAt": when,
        "data": data,
        "url": f"https://linear.app/acme/issue/ENG-{number}",
        "type": event.event_type,
        "organizationId": derived_uuid("organization"),
        "webhookTimestamp": event.timestamp * 1000,
        "webhookId": derived_uuid("webhook"),
    }
    headers = {
        "Linear-Delivery": event.event_id,
        "Linear-Event": event.event_type,
        "User-Agent": "Linear-Webhook",
    }
    return Envelope(body, headers)


def razorpay(event: EventToSign) -> Envelope:
    kind = event.event_type.split(".")[0]

    def sample() -> dict[str, Any]:
        entity: dict[str, Any] = {"id": f"{kind[:5]}_{derived(event.event_id, 14)}"}
        entity["entity"] = kind
        if kind == "payment":
            entity.update(amount=50000, currency="INR", status="captured", method="card")
            entity.update(captured=True, email="alice@example.com", contact="+919900000000")
        entity["created_at"] = event.timestamp
        return {kind: {"entity": entity}}

    payload = object_or_sample(event, "razorpay", "the payload of entities", sample)
    if not all(isinstance(v, dict) for v in payload.values()):
        raise SigningError('razorpay: each entry of the payload is {"entity": {...}}')
    body = {
        "entity": "event",
        "account_id": "acc_" + derived("account", 14),
        "event": event.event_type,
        "contains": list(payload),
        "payload": payload,
        "created_at": event.timestamp,
    }
    return Envelope(body, {"X-Razorpay-Event-Id": event.event_id})


def resend(event: EventToSign) -> Envelope:
    when = iso(event.timestamp, MILLIS)
    email = object_or_sample(
        event,
        "resend",
        "the email in data",
        lambda: {
            "email_id": derived_uuid(event.event_id, "email"),
            "created_at": when,
            "from": "Acme <onboarding@resend.dev>",
            "to": ["delivered@resend.dev"],
            "subject": "Hello",
        },
    )
    return Envelope({"type": event.event_type, "created_at": when, "data": email})


def sentry(event: EventToSign) -> Envelope:
    resource, when = event.event_type, iso(event.timestamp, MILLIS)

    def sample() -> dict[str, Any]:
        item: dict[str, Any] = {"id": str(derived_number(event.event_id, 10))}
        if resource == "issue":
            item.update(shortId="ACME-1", title="ZeroDivisionError: division by zero")
            item.update(culprit="app.views in index", level="error", status="unresolved")
            item.update(project={"id": "1", "slug": "acme"}, firstSeen=when, lastSeen=when)
        return {resource: item}

    body = {
        "action": "created",
        "installation": {"uuid": derived_uuid("installation")},
        "data": object_or_sample(event, "sentry", "data, {resource: object}", sample),
        "actor": {"type": "application", "id": "sentry", "name": "Sentry"},
    }
    headers = {
        "Sentry-Hook-Resource": resource,
        "Sentry-Hook-Timestamp": str(event.timestamp),
        "Request-ID": event.event_id,
    }
    return Envelope(body, headers)
