"""The envelopes of the presets whose event id is the digest of the body: Calendly and
Lemon Squeezy (what `data` replaces in each: the table in `recipe_samples.py`).

Their bodies hold no clock (their times are `SAMPLE_TIME`): the same event twice is the
same bytes, a duplicate, and the event id shapes the sample (its ids are derived from it),
so another id is another event. With `data`, their event is the data: the same data is the
same event whatever id is given.
"""

from __future__ import annotations

from workers.signing.base import EventToSign
from workers.signing.envelope import (
    MILLIS,
    SAMPLE_TIME,
    Envelope,
    derived,
    derived_number,
    derived_uuid,
    iso,
    object_or_sample,
)

LEMON_RESOURCES = (
    ("subscription_payment_", "subscription-invoices"),
    ("subscription_", "subscriptions"),
    ("license_key_", "license-keys"),
    ("order_", "orders"),
)


def calendly(event: EventToSign) -> Envelope:
    api, when = "https://api.calendly.com", iso(SAMPLE_TIME, MILLIS)
    scheduled = f"{api}/scheduled_events/{derived_uuid(event.event_id, 'event')}"
    invitee = derived_uuid(event.event_id, "invitee")
    payload = object_or_sample(
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


def lemonsqueezy(event: EventToSign) -> Envelope:
    name = event.event_type
    kind = next((r for p, r in LEMON_RESOURCES if name.startswith(p)), name.split("_")[0] + "s")
    when = iso(SAMPLE_TIME, MILLIS)
    number = str(derived_number(event.event_id, 7))
    resource = object_or_sample(
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
