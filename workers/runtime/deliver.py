"""The RQ job function: one event, run through the handlers registered for its source and type.

It tells the worker "done" from "ignored" (no handler for the type) and "stale" (every
handler's version guard found a newer version already applied) in the job's meta, which
RQ hands to the worker's success handling in the same process; it returns the same word.
`PermanentError` empties the job's retry budget before RQ decides, so RQ moves it straight
to the failed registry, our dead-letter store.

The handlers themselves run in `registry.run_handlers`, which the pytest plugin's
`deliver` fixture calls too; the plugin's `receiver` runs this very function in its own
process, and hears each job's end through `watching`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl

from rq import get_current_job
from rq.job import Job

from app.jobstate import EventCall, EventStatus, JobMeta, PayloadFormat
from app.keys import Keys
from workers.event import Event, PermanentError
from workers.registry import HandlerRun, Registered, registry, run_handlers
from workers.versions import JobContext, current

# Hears how each job's handlers ended: the event, the matching handlers, each one's end,
# and the exception that ended the run (None when none did). Only the pytest plugin sets
# it, while it runs the worker in its own process; None in production, which costs one
# lookup per job.
Watcher = Callable[[Event, list[Registered], list[HandlerRun], BaseException | None], None]
watching: ContextVar[Watcher | None] = ContextVar("webhook_watcher", default=None)


def deliver(*args: Any) -> str:
    """RQ calls this with the `EventCall` arguments the receiver stored in the job."""
    call = EventCall.from_args(args)
    job = get_current_job()
    meta = JobMeta.from_meta(job.meta) if job is not None else None
    entries = registry.handlers_for(call.source, call.type)
    watcher = watching.get()
    if not entries:
        if watcher is not None:  # an ignored event is not even parsed otherwise
            watcher(event_of(call, meta), entries, [], None)
        return _ran(job, meta, EventStatus.IGNORED)
    event = event_of(call, meta)
    token = current.set(_context(job, meta)) if job is not None and meta else None
    runs: list[HandlerRun] = []
    try:
        ran = run_handlers(event, entries, runs.append if watcher is not None else None)
    except Exception as exc:
        if watcher is not None:
            watcher(event, entries, runs, exc)
        if isinstance(exc, PermanentError) and job is not None and meta is not None:
            job.retries_left = 0
            meta.permanent = True
            job.meta = meta.to_meta()
        raise
    finally:
        if token is not None:
            current.reset(token)
    if watcher is not None:
        watcher(event, entries, runs, None)
    return _ran(job, meta, EventStatus.DONE if ran else EventStatus.STALE)


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
