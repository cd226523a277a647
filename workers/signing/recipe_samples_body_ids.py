"""The envelopes of the presets whose event id is in the body they sign: Intercom, PagerDuty,
Square, Typeform and Zendesk (what `data` replaces in each: the table in
`recipe_samples.py`). The id is written where the preset's recipe reads it
(`recipe_signing.py`); the samples' objects take ids derived from it.
"""

from __future__ import annotations

from typing import Any

from workers.signing.base import EventToSign
from workers.signing.envelope import (
    MILLIS,
    Envelope,
    derived,
    derived_number,
    derived_uuid,
    iso,
    object_or_sample,
)


def intercom(event: EventToSign) -> Envelope:
    kind = event.event_type.split(".")[0]
    item = object_or_sample(
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


def pagerduty(event: EventToSign) -> Envelope:
    incident = "Q" + derived(event.event_id, 13, "incident").upper()
    when = iso(event.timestamp, MILLIS)
    data = object_or_sample(
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


def square(event: EventToSign) -> Envelope:
    kind, when = event.event_type.split(".")[0], iso(event.timestamp, MILLIS)
    sample_id = derived(event.event_id, 22, kind).upper()

    def sample() -> dict[str, Any]:
        item: dict[str, Any] = {"id": sample_id, "created_at": when, "updated_at": when}
        if kind == "payment":
            item.update(amount_money={"amount": 1000, "currency": "USD"}, status="COMPLETED")
            item.update(location_id="L88917AVBK2S5", source_type="CARD", version=1)
        return {kind: item}

    obj = object_or_sample(event, "square", "data.object, {type: object}", sample)
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
    response = object_or_sample(
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
    detail = object_or_sample(
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
