"""What `deliver(event)` (and the `receiver`'s `run_jobs()`) returns: how the event's
attempt ended, and each matching handler's turn, named by its function name.

It is made of what `attempt.run_handlers` reports while it runs the handlers, and of what
the worker's job would raise (`attempt.attempt_failure`), the worker's own code, so it says
what the worker did, not what a copy of it would do.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from enum import StrEnum

from app.turns import HandlerState
from workers.event import Event
from workers.registry import HandlerFunc, Registered
from workers.runtime.attempt import HandlerRun, failure_ends_event

__all__ = ["HandlerResult", "HandlerState", "Outcome", "Status", "outcome_of"]


class Status(StrEnum):
    """The attempt's end, as the worker settles it."""

    DONE = "done"  # the handlers ran and none raised
    IGNORED = "ignored"  # no handler for the source and type
    STALE = "stale"  # every handler's version guard found a newer version applied
    # A handler raised: the worker retries the handlers that failed (WEBHOOK_MAX_RETRIES,
    # WEBHOOK_RETRY_INTERVALS), or dead-letters the event now when no handler waits for a
    # retry and one raised `PermanentError` (`Outcome.permanent`).
    FAILED = "failed"

    def __repr__(self) -> str:  # 'done', not <Status.DONE: 'done'>, in a test's diff
        return repr(self.value)


@dataclass(frozen=True, slots=True)
class HandlerResult:
    name: str  # the function's name; module-qualified if two handlers share it
    state: HandlerState
    error: BaseException | None
    func: HandlerFunc


@dataclass(frozen=True, slots=True)
class Outcome:
    event: Event
    status: Status
    handlers: tuple[HandlerResult, ...]
    # What the worker's job raised: the failing handler's exception, or `HandlersFailed`
    # naming each when more than one failed.
    error: BaseException | None = None

    @property
    def permanent(self) -> bool:
        """True when the event is dead-lettered now, its retries unspent: a handler raised
        `PermanentError` and none failed otherwise."""
        return self.error is not None and failure_ends_event(self.error)

    @property
    def states(self) -> dict[str, HandlerState]:
        """Each handler's name and state, in the order they run: one assertion's worth."""
        return {result.name: result.state for result in self.handlers}

    def __repr__(self) -> str:
        """What a failed assertion shows: the event, the end, each handler's, the error."""
        ends = ", ".join(
            f"{r.name}: {r.state}" + (f" ({type(r.error).__name__}: {r.error})" if r.error else "")
            for r in self.handlers
        )
        event = self.event
        return f"<Outcome {self.status} of {event.source} {event.type!r} {event.id!r}: [{ends}]>"

    def __getitem__(self, name: str) -> HandlerResult:
        for result in self.handlers:
            if result.name == name:
                return result
        known = ", ".join(r.name for r in self.handlers) or "none"
        raise KeyError(f"no handler {name!r} matched this event (handlers: {known})")


def outcome_of(
    event: Event,
    entries: list[Registered],
    runs: list[HandlerRun],
    error: BaseException | None,
) -> Outcome:
    """The outcome of one attempt at `entries`, of which `runs` are those that had their
    turn (the others had succeeded on an earlier attempt, or a timeout came first), and
    `error` what the job raised."""
    names = _names(entries)
    turns = {run.entry.name: run for run in runs}
    results = []
    for entry, name in zip(entries, names, strict=True):
        run = turns.get(entry.name)
        if run is None:
            results.append(HandlerResult(name, HandlerState.NOT_RUN, None, entry.func))
        else:
            results.append(HandlerResult(name, run.state, run.error, entry.func))
    if error is not None:
        status = Status.FAILED
    elif not entries:
        status = Status.IGNORED
    elif all(result.state is HandlerState.STALE for result in results):
        status = Status.STALE
    else:
        status = Status.DONE
    return Outcome(event, status, tuple(results), error)


def _names(entries: list[Registered]) -> list[str]:
    plain = [getattr(entry.func, "__name__", repr(entry.func)) for entry in entries]
    repeated = {name for name, count in Counter(plain).items() if count > 1}
    return [
        f"{getattr(entry.func, '__module__', '?')}.{getattr(entry.func, '__qualname__', name)}"
        if name in repeated
        else name
        for entry, name in zip(entries, plain, strict=True)
    ]
