"""The RQ job function: one event, run through the handlers registered for its source and type.

It tells the worker "done" from "ignored" (no handler for the type) and "stale" (every
handler's version guard found a newer version already applied) in the job's meta, which
RQ hands to the worker's success handling in the same process; it returns the same word.
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

from app.jobstate import EventCall, EventStatus, JobMeta, PayloadFormat
from app.keys import Keys
from workers.event import Event, PermanentError
from workers.registry import registry, run_handler
from workers.versions import JobContext, current, newer_version


def deliver(*args: Any) -> str:
    """RQ calls this with the `EventCall` arguments the receiver stored in the job."""
    call = EventCall.from_args(args)
    job = get_current_job()
    meta = JobMeta.from_meta(job.meta) if job is not None else None
    entries = registry.handlers_for(call.source, call.type)
    if not entries:
        return _ran(job, meta, EventStatus.IGNORED)
    event = Event(
        source=call.source,
        id=call.event_id,
        type=call.type,
        payload=parse_payload(call.raw, meta.payload_format if meta else PayloadFormat.JSON),
        raw=call.raw,
        headers=dict(call.headers),
        received_at=datetime.fromtimestamp(call.received_at, UTC),
        attempt=meta.attempts if meta else 1,
    )
    token = current.set(_context(job, meta)) if job is not None and meta else None
    ran = 0
    try:
        for entry in entries:
            guard = entry.guard
            if guard is not None and not newer_version(event, guard.entity, guard.version):
                continue
            run_handler(entry.func, event)
            ran += 1
    except PermanentError:
        if job is not None and meta is not None:
            job.retries_left = 0
            meta.permanent = True
            job.meta = meta.to_meta()
        raise
    finally:
        if token is not None:
            current.reset(token)
    return _ran(job, meta, EventStatus.DONE if ran else EventStatus.STALE)


def _ran(job: Job | None, meta: JobMeta | None, status: EventStatus) -> str:
    if job is not None and meta is not None:
        meta.state = status
        job.meta = meta.to_meta()
    return str(status)


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


def _context(job: Job, meta: JobMeta) -> JobContext | None:
    if not meta.prefix:
        return None
    return JobContext(job.connection, Keys(meta.prefix, job.origin), meta.ledger_ttl, job.id)
