# ruff: noqa: E501 - the table below is quoted whole by the CLI's help
"""The envelope of each recipe preset: a realistic minimal body and the delivery headers
the provider sends, around the event object that `data` replaces (None keeps the sample).
`recipe_signing.py` then sets the id, type and timestamp where the preset's recipe reads
them, over any value `data` holds there, and signs.

| preset | `data` replaces | event id sent as | answered id | type sent as |
|---|---|---|---|---|
| `calendly` | `payload` (the invitee) | the sample invitee's `uri` | `sha256:` digest of the body | `event` |
| `clerk` | `data` (the user...) | `svix-id` | the id | `type` |
| `intercom` | `data.item` (the conversation, contact...) | `id` | the id | `topic` |
| `lemonsqueezy` | `data` (the JSON:API resource) | the sample resource's `id` | `sha256:` digest of the body | `X-Event-Name`, `meta.event_name` |
| `linear` | `data` (the issue...) | `Linear-Delivery` | the id | `Linear-Event`, `type` |
| `pagerduty` | `event.data` (the incident...) | `event.id` | the id | `event.event_type` |
| `razorpay` | `payload` (`{"payment": {"entity": {...}}}`; `contains` lists its keys) | `X-Razorpay-Event-Id` | the id | `event` |
| `resend` | `data` (the email) | `svix-id` | the id | `type` |
| `sentry` | `data` (`{"<resource>": {...}}`) | `Request-ID` | the id | `Sentry-Hook-Resource` |
| `square` | `data.object` (`{"payment": {...}}`; `data.type`, `data.id` follow it) | `event_id` | the id | `type` |
| `typeform` | `form_response` | `event_id` | the id | `event_type` |
| `zendesk` | `detail` (the ticket...; `subject` follows its `id`) | `id` | the id | `type` |

Calendly's and Lemon Squeezy's ids are digests, so their bodies hold no clock (their
times are `SAMPLE_TIME`): the same event twice is the same bytes. With `data`, their
event is the data: the same data is the same event whatever id is given. Where the id is
a header the signature does not cover (Linear, Razorpay, Sentry), the receiver also
claims the signed body, so two events need two bodies: the samples' objects take ids
derived from the event id, and with `data`, different data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from workers.signing.base import EventToSign, SigningError, object_data
from workers.signing.envelope import (
    MILLIS,
    SAMPLE_TIME,
    Envelope,
    derived,
    derived_number,
    derived_uuid,
    iso,
)


def _object(event: EventToSign, name: str, what: str, sample: Callable[[], Any]) -> Any:
    """The event object: `data` (a JSON object) or the sample."""
    return sample() if event.data is None else object_data(event.data, name, what)


def calendly(event: EventToSign) -> Envelope:
    api, when = "https://api.calendly.com", iso(SAMPLE_TIME, MILLIS)
    scheduled = f"{api}/scheduled_events/{derived_uuid(event.event_id, 'event')}"
    invitee = derived_uuid(event.event_id, "invitee")
    payload = _object(
        event,
        "calendly",
        "the invitee payload",
        lambda: {
            "uri": f"{scheduled}/invitees/{invitee}",
            "email": "alice@example.com",
            "name": "Alice Example",
            "status": "active",
            "timezone": "Europe/Paris",
            "event": scheduled,
            "created_at": when,
            "updated_at": when,
            "cancel_url": f"https://calendly.com/cancellations/{invitee}",
            "reschedule_url": f"https://calendly.com/reschedulings/{invitee}",
            "rescheduled": False,
            "questions_and_answers": [],
        },
    )
    body = {
        "created_at": when,
        "created_by": f"{api}/users/{derived('user', 16).upper()}",
        "event": event.event_type,
        "payload": payload,
    }
    return Envelope(body)


def clerk(event: EventToSign) -> Envelope:
    ms, email = event.timestamp * 1000, "idn_" + derived(event.event_id, 24, "email")
    user = _object(
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


def intercom(event: EventToSign) -> Envelope:
    kind = event.event_type.split(".")[0]
    item = _object(
        event,
        "intercom",
        "the notification's data.item",
        lambda: {
            "type": kind,
            "id": str(derived_number(event.event_id, 9)),
            "created_at": event.timestamp,
            "updated_at": event.timestamp,
        },
    )
    body = {
        "type": "notification_event",
        "app_id": "abc123de",
        "data": {"type": "notification_event_data", "item": item},
        "links": {},
        "id": event.event_id,
        "topic": event.event_type,
        "delivery_status": "pending",
        "delivery_attempts": 1,
        "delivered_at": 0,
        "first_sent_at": event.timestamp,
        "created_at": event.timestamp,
    }
    return Envelope(body)


LEMON_RESOURCES = (
    ("subscription_payment_", "subscription-invoices"),
    ("subscription_", "subscriptions"),
    ("license_key_", "license-keys"),
    ("order_", "orders"),
)


def lemonsqueezy(event: EventToSign) -> Envelope:
    name = event.event_type
    kind = next((r for p, r in LEMON_RESOURCES if name.startswith(p)), name.split("_")[0] + "s")
    when = iso(SAMPLE_TIME, MILLIS)
    number = str(derived_number(event.event_id, 7))
    resource = _object(
        event,
        "lemonsqueezy",
        "the JSON:API resource in data",
        lambda: {
            "type": kind,
            "id": number,
            "attributes": {
                "store_id": 12345,
                "user_email": "alice@example.com",
                "status": "paid",
                "currency": "USD",
                "total": 1999,
                "test_mode": True,
                "created_at": when,
                "updated_at": when,
            },
            "links": {"self": f"https://api.lemonsqueezy.com/v1/{kind}/{number}"},
        },
    )
    meta = {"event_name": name, "test_mode": True, "webhook_id": derived_uuid("webhook")}
    return Envelope({"meta": meta, "data": resource}, {"X-Event-Name": name})


def linear(event: EventToSign) -> Envelope:
    when, number = iso(event.timestamp, MILLIS), derived_number(event.event_id, 3)
    data = _object(
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


def pagerduty(event: EventToSign) -> Envelope:
    incident = "Q" + derived(event.event_id, 13, "incident").upper()
    when = iso(event.timestamp, MILLIS)
    data = _object(
        event,
        "pagerduty",
        "the event's data",
        lambda: {
            "id": incident,
            "type": "incident",
            "self": f"https://api.pagerduty.com/incidents/{incident}",
            "html_url": f"https://acme.pagerduty.com/incidents/{incident}",
            "number": derived_number(event.event_id, 4),
            "status": "triggered",
            "title": "The server is on fire",
            "urgency": "high",
            "created_at": when,
            "service": {"id": "PF9KMXH", "type": "service_reference", "summary": "API"},
        },
    )
    body = {
        "event": {
            "id": event.event_id,
            "event_type": event.event_type,
            "resource_type": event.event_type.split(".")[0],
            "occurred_at": when,
            "agent": {"id": "PLH1HKV", "type": "user_reference", "summary": "Alice Example"},
            "client": None,
            "data": data,
        }
    }
    headers = {
        "X-Webhook-Id": derived_uuid(event.event_id, "delivery"),
        "X-Webhook-Subscription": "PY1OL64",
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

    payload = _object(event, "razorpay", "the payload of entities", sample)
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
    email = _object(
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
        "data": _object(event, "sentry", "data, {resource: object}", sample),
        "actor": {"type": "application", "id": "sentry", "name": "Sentry"},
    }
    headers = {
        "Sentry-Hook-Resource": resource,
        "Sentry-Hook-Timestamp": str(event.timestamp),
        "Request-ID": event.event_id,
    }
    return Envelope(body, headers)


def square(event: EventToSign) -> Envelope:
    kind, when = event.event_type.split(".")[0], iso(event.timestamp, MILLIS)
    sample_id = derived(event.event_id, 22, kind).upper()

    def sample() -> dict[str, Any]:
        item: dict[str, Any] = {"id": sample_id, "created_at": when, "updated_at": when}
        if kind == "payment":
            item.update(amount_money={"amount": 1000, "currency": "USD"}, status="COMPLETED")
            item.update(location_id="L88917AVBK2S5", source_type="CARD", version=1)
        return {kind: item}

    obj = _object(event, "square", "data.object, {type: object}", sample)
    inner = obj.get(kind)
    object_id = inner.get("id") if isinstance(inner, dict) else None
    body = {
        "merchant_id": "6SSW7HV8K2ST5",
        "type": event.event_type,
        "event_id": event.event_id,
        "created_at": when,
        "data": {
            "type": kind,
            "id": object_id if isinstance(object_id, str) else sample_id,
            "object": obj,
        },
    }
    return Envelope(body, {"Square-Initial-Delivery-Timestamp": when})


def typeform(event: EventToSign) -> Envelope:
    field = {"id": "DlXFaesGBpoF", "type": "short_text", "ref": "name"}
    response = _object(
        event,
        "typeform",
        "the form_response",
        lambda: {
            "form_id": "lT4Z3j",
            "token": derived(event.event_id, 32, "response"),
            "landed_at": iso(event.timestamp - 60),
            "submitted_at": iso(event.timestamp),
            "definition": {
                "id": "lT4Z3j",
                "title": "Webhooks example",
                "fields": [{**field, "title": "What is your name?"}],
            },
            "answers": [{"type": "text", "text": "Alice", "field": field}],
            "hidden": {},
        },
    )
    body = {"event_id": event.event_id, "event_type": event.event_type, "form_response": response}
    return Envelope(body)


def zendesk(event: EventToSign) -> Envelope:
    domain = event.event_type.removeprefix("zen:event-type:").split(".")[0]
    when, sample_id = iso(event.timestamp), str(derived_number(event.event_id, 6))
    detail = _object(
        event,
        "zendesk",
        "the detail",
        lambda: {
            "id": sample_id,
            "subject": "My printer is on fire!",
            "status": "NEW",
            "priority": "HIGH",
            "type": "INCIDENT",
            "requester_id": "6596848315901",
            "created_at": when,
            "updated_at": when,
            "via": {"channel": "web_form"},
        },
    )
    detail_id = detail.get("id")
    body = {
        "type": event.event_type,
        "account_id": 12514403,
        "id": event.event_id,
        "time": when,
        "zendesk_event_version": "2022-11-06",
        "subject": f"zen:{domain}:{detail_id if isinstance(detail_id, str | int) else sample_id}",
        "detail": detail,
        "event": {},
    }
    headers = {
        "X-Zendesk-Webhook-Id": "01" + derived("webhook", 24).upper(),
        "X-Zendesk-Webhook-Invocation-Id": str(derived_number(event.event_id, 10, "invocation")),
    }
    return Envelope(body, headers)


SAMPLES: dict[str, Callable[[EventToSign], Envelope]] = {
    "calendly": calendly,
    "clerk": clerk,
    "intercom": intercom,
    "lemonsqueezy": lemonsqueezy,
    "linear": linear,
    "pagerduty": pagerduty,
    "razorpay": razorpay,
    "resend": resend,
    "sentry": sentry,
    "square": square,
    "typeform": typeform,
    "zendesk": zendesk,
}
