"""The `Event` a handler receives, built from the job the receiver stored: its call (source,
id, type, raw bytes, headers) and its meta (payload format, attempt number).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl

from app.jobstate import EventCall, JobMeta, PayloadFormat
from workers.event import Event


def event_of(call: EventCall, meta: JobMeta | None) -> Event:
    """The `Event` a handler receives, from the job's call and meta: the worker's job and
    the pytest plugin's `webhook_event` build it here alike."""
    return Event(
        source=call.source,
        id=call.event_id,
        type=call.type,
        payload=parse_payload(call.raw, meta.payload_format if meta else PayloadFormat.JSON),
        raw=call.raw,
        headers=dict(call.headers),
        received_at=datetime.fromtimestamp(call.received_at, UTC),
        attempt=meta.attempts if meta else 1,
    )


def parse_payload(raw: bytes, payload_format: PayloadFormat) -> Any:
    """The verified bytes as the handler sees them: the receiver enqueued only bodies that
    parsed as a JSON object, or as a form (its fields; a repeated field gives a list)."""
    if payload_format is not PayloadFormat.FORM:
        return json.loads(raw)
    fields: dict[str, Any] = {}
    for name, value in parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True):
        if name in fields:
            previous = fields[name]
            fields[name] = [*previous, value] if isinstance(previous, list) else [previous, value]
        else:
            fields[name] = value
    return fields
