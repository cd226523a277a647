"""The job one verified delivery becomes, before anything is written: its id, RQ's call and
the meta the worker settles it by. The receiver, `webhooks replay` and the pytest plugin's
`webhook_event` all build it here, so a test's event is the receiver's."""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.jobstate import EventCall, JobMeta
from app.keys import job_id_for
from app.providers import Delivery
from app.settings import Settings, SourceConfig

_UNSAFE = re.compile(r"[^A-Za-z0-9._:@/-]")


def safe_label(value: str, limit: int = 80) -> str:
    """Text for RQ's job description: short, and nothing a page could take for markup."""
    cleaned = _UNSAFE.sub("?", value)
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 1] + "~"


@dataclass(frozen=True, slots=True)
class NewJob:
    """One event's job, before it is written: its id, the call and the meta."""

    job_id: str
    call: EventCall
    meta: JobMeta
    description: str


def new_job(
    settings: Settings,
    source: SourceConfig,
    delivery: Delivery,
    raw: bytes,
    received_at: float,
    job_id: str | None = None,
    duplicate: bool = False,
    trace: str = "",
    prefix: str | None = None,
) -> NewJob:
    """The job one verified delivery becomes, before anything is written: the pytest
    plugin's `webhook_event` builds its `Event` from this too, so it is the receiver's."""
    description = (
        f"{source.name} {safe_label(delivery.event_type or '(untyped)')} "
        f"{safe_label(delivery.event_id)}" + (" (duplicate, log-only)" if duplicate else "")
    )
    meta = JobMeta(
        source=source.name,
        event_id=delivery.event_id,
        type=delivery.event_type,
        received_at=received_at,
        # The worker settles the event under this prefix: on a cluster, its shard's.
        prefix=prefix or settings.webhook_key_prefix,
        ledger_ttl=settings.webhook_ledger_ttl,
        payload_format=delivery.payload_format,
        duplicate=duplicate,
        budget=settings.webhook_max_retries,
        trace=trace,
    )
    call = EventCall(
        source.name, delivery.event_id, delivery.event_type, raw, delivery.headers, received_at
    )
    return NewJob(job_id or job_id_for(source.name, delivery.event_id), call, meta, description)
