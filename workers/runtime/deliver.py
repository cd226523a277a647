"""The RQ job function: one event, run through the handlers registered for its source and type.

Each handler retries on its own (`app/turns.py`): an attempt runs the matching handlers that
have not yet succeeded for the event, every one of them whatever the others do, and records
each one's turn in the job's meta, which the worker settles in the batch's transaction. A
handler that succeeded is never run again for the event; one that failed runs on the next
attempt; a `PermanentError` marks its handler as not to be retried, and the event is
dead-lettered as soon as no other handler of it waits for a retry (at once when none
does), by emptying the job's retry budget before RQ decides. A handler deployed since the
last attempt runs; one that had not succeeded and is gone is recorded as removed.

A worker killed mid-attempt loses only what was not yet written: after each handler that
succeeds with another to follow, the meta is written at once (`checkpointing`, which the
runner streams without waiting for the reply), so the handlers that finished before the
kill do not run again; the handler that was running, or that returned just before the
write, runs again on the retry (at least once).

"done", "ignored" (no handler) and "stale" (every handler's version guard found a newer
version applied) go in the job's meta too, which RQ hands to the worker's success
handling in the same process; the job returns the same word. The handlers themselves run
in `registry.run_handlers`, which the pytest plugin's `deliver` fixture calls too; the
plugin's `receiver` runs this very function in its own process, and hears each job's end
through `watching`; a failed attempt goes to the worker's error reporter too, when it has
one (Sentry: `reports.py`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl

from rq import get_current_job
from rq.job import Job

from app.jobstate import EventCall, EventStatus, JobMeta, PayloadFormat
from app.keys import Keys
from app.turns import FAILURES, HandlerState, cut_error
from workers.event import Event, PermanentError
from workers.registry import (
    HandlerRun,
    HandlersFailed,
    HandlerSpan,
    Registered,
    registry,
    run_handlers,
)
from workers.runtime.reports import reporting
from workers.versions import JobContext, current

# Hears how each job's handlers ended: the event, the matching handlers, each turn, and
# the exception the job raised (None when none). Only the pytest plugin sets it, while it
# runs the worker in its own process; None in production, which costs one lookup per job.
Watcher = Callable[[Event, list[Registered], list[HandlerRun], BaseException | None], None]
watching: ContextVar[Watcher | None] = ContextVar("webhook_watcher", default=None)
# Writes the job's meta now, mid-attempt: set by the runner around its batch. Unset (the
# job run by anything else), the meta is written with a round trip of its own.
checkpointing: ContextVar[Callable[[Job], None] | None] = ContextVar(
    "webhook_checkpoint", default=None
)
# Each handler's span (tracing on): set by the runner around its batch, like `checkpointing`.
handler_spans: ContextVar[HandlerSpan | None] = ContextVar("webhook_handler_spans", default=None)


@dataclass(frozen=True, slots=True)
class Plan:
    """What one attempt runs: the matching handlers not yet succeeded (nor failed
    permanently), and the names of those that had not succeeded and are registered no more."""

    todo: list[Registered]
    removed: list[str]

    @classmethod
    def of(cls, entries: list[Registered], states: dict[str, HandlerState]) -> Plan:
        if not states:
            return cls(entries, [])
        todo = [e for e in entries if not _settled_for_now(states.get(e.name))]
        names = {e.name for e in entries}
        removed = [
            name
            for name, state in states.items()
            if name not in names and not state.succeeded and state is not HandlerState.REMOVED
        ]
        return cls(todo, removed)


def _settled_for_now(state: HandlerState | None) -> bool:
    return state is not None and (state.succeeded or state is HandlerState.PERMANENT)


def deliver(*args: Any) -> str:
    """RQ calls this with the `EventCall` arguments the receiver stored in the job."""
    call = EventCall.from_args(args)
    job = get_current_job()
    meta = JobMeta.from_meta(job.meta) if job is not None else None
    entries = registry.handlers_for(call.source, call.type)
    states = meta.handler_states if meta is not None else {}
    plan = Plan.of(entries, states)
    if not entries and not plan.removed and not states:
        watcher = watching.get()
        if watcher is not None:  # an ignored event is not even parsed otherwise
            watcher(event_of(call, meta), entries, [], None)
        return _ran(job, meta, EventStatus.IGNORED)
    event = event_of(call, meta)
    # Each turn as the meta stores it, [name, state, error]: built once, never parsed here.
    turns = [[name, HandlerState.REMOVED.value, ""] for name in plan.removed]
    states.update(dict.fromkeys(plan.removed, HandlerState.REMOVED))
    runs: list[HandlerRun] = []

    def turn_ended(run: HandlerRun) -> None:
        runs.append(run)
        states[run.name] = run.state
        error = cut_error(_error_line(run.error)) if run.error is not None else ""
        turns.append([run.name, run.state.value, error])
        if run.state.succeeded and len(runs) < len(plan.todo) and job and meta:
            _keep(job, meta, states, turns, save=True)
            (checkpointing.get() or _write_meta)(job)

    token = current.set(_context(job, meta)) if job is not None and meta else None
    try:
        run_handlers(event, plan.todo, turn_ended, handler_spans.get())
    except BaseException as exc:  # a timeout, or an exit: the attempt ends here
        _keep(job, meta, states, turns, save=True)
        _heard(job, event, entries, runs, exc)
        raise
    finally:
        if token is not None:
            current.reset(token)
    failure = attempt_failure(runs, states)
    if failure is not None and failure_ends_event(failure) and job and meta:
        job.retries_left = 0  # dead-lettered now: nothing is left to retry
        meta.permanent = True
    # Saved in the job here when it fails; `_ran` saves it when it succeeds.
    _keep(job, meta, states, turns, save=failure is not None)
    _heard(job, event, entries, runs, failure)
    if failure is not None:
        raise failure
    return _ran(job, meta, _status(states))


def _heard(
    job: Job | None,
    event: Event,
    entries: list[Registered],
    runs: list[HandlerRun],
    failure: BaseException | None,
) -> None:
    """How the attempt ended, to whoever listens: the pytest plugin's watcher, and (when it
    failed) the process's error reporter, told whether RQ will dead-letter the event."""
    watcher = watching.get()
    if watcher is not None:
        watcher(event, entries, runs, failure)
    reporter = reporting.get()
    if reporter is not None and failure is not None:
        retries_left = job.retries_left if job is not None else None
        reporter.attempt_failed(event, runs, dead=not (retries_left and retries_left > 0))


def attempt_failure(
    runs: list[HandlerRun], states: dict[str, HandlerState]
) -> BaseException | None:
    """What the job raises: the one failure's own exception, or `HandlersFailed` naming each
    failure; None when no handler failed and none waits after a permanent failure."""
    failed = [run for run in runs if run.state in FAILURES]
    retrying = any(run.state is HandlerState.FAILED for run in runs)
    earlier = [
        name
        for name, state in states.items()
        if state is HandlerState.PERMANENT and all(run.name != name for run in runs)
    ]
    if len(failed) == 1 and not earlier:
        return failed[0].error
    if not failed and not earlier:
        return None
    lines = [f"{run.name}: {_error_line(run.error)}" for run in failed]
    lines += [f"{name}: failed permanently on an earlier attempt" for name in earlier]
    count = len(failed) + len(earlier)
    error = HandlersFailed(
        f"{count} handler{'s' if count > 1 else ''} failed: " + "; ".join(lines),
        permanent=not retrying,
        failures=tuple((run.name, run.error) for run in failed if run.error is not None),
    )
    error.__cause__ = failed[0].error if failed else None
    return error


def failure_ends_event(error: BaseException) -> bool:
    """True when the event is dead-lettered now, whatever its retry budget holds."""
    return isinstance(error, PermanentError) or getattr(error, "permanent", False) is True


def _status(states: dict[str, HandlerState]) -> EventStatus:
    found = set(states.values())
    if HandlerState.DONE in found:
        return EventStatus.DONE
    return EventStatus.STALE if HandlerState.STALE in found else EventStatus.IGNORED


def _keep(
    job: Job | None,
    meta: JobMeta | None,
    states: dict[str, HandlerState],
    turns: list[list[str]],
    save: bool,
) -> None:
    """The handlers' states and this attempt's turns, in the meta; with `save`, in the
    job's too (in memory; the runner writes it)."""
    if job is None or meta is None:
        return
    # A state this version does not know (a newer worker wrote it) is kept as it is.
    stored = meta.handlers if isinstance(meta.handlers, dict) else {}
    kept = {name: value for name, value in stored.items() if name not in states}
    meta.handlers = {**kept, **{name: state.value for name, state in states.items()}}
    meta.turns = turns
    if save:
        job.meta = meta.to_meta()


def _write_meta(job: Job) -> None:
    job.connection.hset(job.key, "meta", job.serializer.dumps(job.meta))


def _error_line(error: BaseException | None) -> str:
    if error is None:
        return ""
    message = str(error)
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


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
