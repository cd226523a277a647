"""One attempt of an event, its rules in one place: which handlers it runs (`Plan`), each
one's turn (`run_handlers`: every handler runs whatever the others do; a timeout or an exit
ends the attempt), what the job raises when some fail (`attempt_failure`: the failure
itself, or `HandlersFailed` naming each), whether that ends the event now
(`failure_ends_event`), the word it returns when none fails (`final_status`), and how an
error is worded wherever an attempt's error is shown (`error_line`: the ledger's turns, the
handler's span, `HandlersFailed`'s message).

`deliver.py` runs an attempt as the RQ job, around these rules (the job's meta, its
checkpoints, its listeners); the pytest plugin's `deliver` fixture runs the same turns and
reports its outcomes with the same rules (`workers/testing/`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

from rq.timeouts import JobTimeoutException

from app.jobstate import EventStatus
from app.turns import FAILURES, HandlerState
from workers import handler_loop
from workers.event import Event, PermanentError
from workers.registry import HandlerFunc, Registered
from workers.versions import newer_version


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


@dataclass(frozen=True, slots=True)
class HandlerRun:
    """One handler's turn at one attempt: its entry, how it ended, what it raised."""

    entry: Registered
    state: HandlerState
    error: BaseException | None = None

    @property
    def name(self) -> str:
        return self.entry.name


# A handler's span around its turn, given its name; what it yields hears how it ended.
HandlerSpan = Callable[[str], AbstractContextManager[Callable[[HandlerRun], None]]]


def run_handlers(
    event: Event,
    entries: list[Registered],
    report: Callable[[HandlerRun], None] | None = None,
    span: HandlerSpan | None = None,
) -> list[HandlerRun]:
    """Run each handler in order, whatever the others do, as the worker's job does: a
    guarded one only when the event is newer than its entity's applied version, else it
    is stale; an exception, from a handler or its guard, is its failure (`PermanentError`:
    its permanent one) and the next handler runs. A timeout (RQ's `JobTimeoutException`)
    or a `BaseException` ends the whole attempt: reported as the running handler's
    failure, then raised. `report` hears each turn as it ends: the worker checkpoints
    successes with it, and the pytest plugin's outcome is made of the same turns. `span`
    (tracing on) wraps each turn in its span (`workers/runtime/spans.py`)."""
    runs: list[HandlerRun] = []
    for entry in entries:
        if span is None:
            run = _turn(event, entry)
        else:
            with span(entry.name) as ended:
                run = _turn(event, entry)
                ended(run)
        runs.append(run)
        if report is not None:
            report(run)
        if ends_attempt(run.error):
            raise run.error  # type: ignore[misc]
    return runs


def ends_attempt(error: BaseException | None) -> bool:
    """A timeout stops the attempt (the job's deadline is spent, so the handlers after it
    would run without one), and so does what is not an `Exception` (SystemExit, Ctrl+C)."""
    return error is not None and (
        isinstance(error, JobTimeoutException) or not isinstance(error, Exception)
    )


def _turn(event: Event, entry: Registered) -> HandlerRun:
    try:
        guard = entry.guard
        if guard is not None and not newer_version(event, guard.entity, guard.version):
            return HandlerRun(entry, HandlerState.STALE)
        run_handler(entry.func, event)
    except PermanentError as exc:
        return HandlerRun(entry, HandlerState.PERMANENT, exc)
    except BaseException as exc:  # raised again by the caller when it ends the attempt
        return HandlerRun(entry, HandlerState.FAILED, exc)
    return HandlerRun(entry, HandlerState.DONE)


def run_handler(func: HandlerFunc, event: Event) -> None:
    """Call the handler; a coroutine handler is awaited on the process's handler loop
    (`handler_loop.py`), kept from one event to the next."""
    result = func(event)
    if inspect.isawaitable(result):
        handler_loop.run(result)


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
    lines = [f"{run.name}: {error_line(run.error)}" for run in failed]
    lines += [f"{name}: failed permanently on an earlier attempt" for name in earlier]
    count = len(failed) + len(earlier)
    error = HandlersFailed(
        f"{count} handler{'s' if count > 1 else ''} failed: " + "; ".join(lines),
        permanent=not retrying,
        failures=tuple((run.name, run.error) for run in failed if run.error is not None),
    )
    error.__cause__ = failed[0].error if failed else None
    return error


class HandlersFailed(Exception):
    """Raised by the job when more than one handler failed (one failure raises its own
    exception), or when one failed permanently on an earlier attempt: names each."""

    def __init__(
        self,
        message: str,
        permanent: bool = False,
        failures: tuple[tuple[str, BaseException], ...] = (),
    ) -> None:
        super().__init__(message)
        self.permanent = permanent  # the event is dead-lettered now, its budget unspent
        # Each failing handler's name and exception: the stored traceback shows each one's
        # frames (this exception's own are the worker's).
        self.failures = failures


def failure_ends_event(error: BaseException) -> bool:
    """True when the event is dead-lettered now, whatever its retry budget holds."""
    return isinstance(error, PermanentError) or getattr(error, "permanent", False) is True


def final_status(states: dict[str, HandlerState]) -> EventStatus:
    found = set(states.values())
    if HandlerState.DONE in found:
        return EventStatus.DONE
    return EventStatus.STALE if HandlerState.STALE in found else EventStatus.IGNORED


def error_line(error: BaseException | None) -> str:
    """An error in one line, as the ledger's turns, the handler's span and `HandlersFailed`
    word it: its type, then its message when it has one ("" for no error)."""
    if error is None:
        return ""
    message = str(error)
    return f"{type(error).__name__}: {message}" if message else type(error).__name__
