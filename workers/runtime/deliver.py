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
handling in the same process; the job returns the same word. The attempt's rules (which
handlers run, each one's turn, what the job raises, the word it returns) are all in
`attempt.py`, which the pytest plugin's `deliver` fixture runs too: this module is the job
around them, what it keeps in the job and who it tells. The plugin's `receiver` runs this
very function in its own process, and hears each job's end through `watching`; a failed
attempt goes to the worker's error reporter too, when it has one (Sentry: `reports.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from rq import get_current_job
from rq.job import Job

from app.jobstate import EventCall, EventStatus, JobMeta
from app.keys import Keys
from app.turns import HandlerState, cut_error
from workers.event import Event
from workers.registry import Registered, registry
from workers.runtime.attempt import (
    HandlerRun,
    HandlerSpan,
    Plan,
    attempt_failure,
    error_line,
    failure_ends_event,
    final_status,
    run_handlers,
)
from workers.runtime.job_event import event_of
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
        error = cut_error(error_line(run.error))  # "" for a handler that returned
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
    return _ran(job, meta, final_status(states))


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


def _ran(job: Job | None, meta: JobMeta | None, status: EventStatus) -> str:
    if job is not None and meta is not None:
        meta.state = status
        job.meta = meta.to_meta()
    return str(status)


def _context(job: Job, meta: JobMeta) -> JobContext:
    # Every event's meta names its prefix (`JobMeta.from_meta` requires one).
    return JobContext(job.connection, Keys(meta.prefix, job.origin), meta.ledger_ttl, job.id)
