"""The RQ job: one event, run through the handlers registered for its source and type.

Its return value is how the worker tells "done" from "ignored" (no handler for the type)
and "stale" (every handler's version guard found a newer version already applied).
`PermanentError` empties the job's retry budget before RQ decides, so RQ moves it straight
to the failed registry, our dead-letter store.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl

from rq import get_current_job
from rq.job import Job

from app.keys import Keys
from workers.event import Event, PermanentError
from workers.registry import registry, run_handler
from workers.versions import JobContext, current, newer_version

DONE = "done"
IGNORED = "ignored"
STALE = "stale"


def deliver(
    source: str,
    event_id: str,
    event_type: str,
    raw: bytes,
    headers: dict[str, str],
    received_at: float,
) -> str:
    job = get_current_job()
    entries = registry.handlers_for(source, event_type)
    if not entries:
        return IGNORED
    event = Event(
        source=source,
        id=event_id,
        type=event_type,
        payload=parse_payload(raw, str(job.meta.get("format", "json")) if job else "json"),
        raw=raw,
        headers=dict(headers),
        received_at=datetime.fromtimestamp(received_at, UTC),
        attempt=int(job.meta.get("attempts", 1)) if job is not None else 1,
    )
    token = current.set(_context(job)) if job is not None else None
    ran = 0
    try:
        for entry in entries:
            guard = entry.guard
            if guard is not None and not newer_version(event, guard.entity, guard.version):
                continue
            run_handler(entry.func, event)
            ran += 1
    except PermanentError:
        if job is not None:
            job.retries_left = 0
            job.meta["permanent"] = True
        raise
    finally:
        if token is not None:
            current.reset(token)
    return DONE if ran else STALE


def parse_payload(raw: bytes, payload_format: str) -> Any:
    """The verified bytes as the handler sees them: the receiver enqueued only bodies that
    parsed as a JSON object, or as a form (its fields; a repeated field gives a list)."""
    if payload_format != "form":
        return json.loads(raw)
    fields: dict[str, Any] = {}
    for name, value in parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True):
        if name in fields:
            previous = fields[name]
            fields[name] = [*previous, value] if isinstance(previous, list) else [previous, value]
        else:
            fields[name] = value
    return fields


def _context(job: Job) -> JobContext | None:
    prefix = job.meta.get("prefix")
    if not prefix:
        return None
    return JobContext(
        job.connection,
        Keys(str(prefix), job.origin),
        int(job.meta.get("ledger_ttl", 30 * 86_400)),
        job.id,
    )
