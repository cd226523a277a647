"""The RQ job: one event, run through the handlers registered for its source and type.

Its return value is how the worker tells "done" from "ignored" (no handler for the type).
`PermanentError` empties the job's retry budget before RQ decides, so RQ moves it straight
to the failed registry, our dead-letter store.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from rq import get_current_job

from workers.event import Event, PermanentError
from workers.registry import registry, run_handler

DONE = "done"
IGNORED = "ignored"


def deliver(
    source: str,
    event_id: str,
    event_type: str,
    raw: bytes,
    headers: dict[str, str],
    received_at: float,
) -> str:
    job = get_current_job()
    handlers = registry.handlers_for(source, event_type)
    if not handlers:
        return IGNORED
    event = Event(
        source=source,
        id=event_id,
        type=event_type,
        # The receiver only enqueues bodies that parsed as JSON objects.
        payload=json.loads(raw),
        raw=raw,
        headers=dict(headers),
        received_at=datetime.fromtimestamp(received_at, UTC),
        attempt=int(job.meta.get("attempts", 1)) if job is not None else 1,
    )
    try:
        for func in handlers:
            run_handler(func, event)
    except PermanentError:
        if job is not None:
            job.retries_left = 0
            job.meta["permanent"] = True
        raise
    return DONE
