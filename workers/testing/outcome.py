"""What `deliver(event)` (and the `receiver`'s `run_jobs()`) returns: how the event's
attempt ended, and each matching handler's turn, named by its function name.

It is made of what `registry.run_handlers` reports while it runs the handlers, the
worker's own code, so it says what the worker did, not what a copy of it would do.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from enum import StrEnum

from workers.event import Event, PermanentError
from workers.registry import HandlerFunc, HandlerRun, HandlerState, Registered

__all__ = ["HandlerResult", "HandlerState", "Outcome", "Status", "outcome_of"]


class Status(StrEnum):
    """The attempt's end, as the worker settles it."""

    DONE = "done"  # a handler ran and none raised
    IGNORED = "ignored"  # no handler for the source and type
    STALE = "stale"  # every handler's version guard found a newer version applied
    # A handler raised: the worker retries (WEBHOOK_MAX_RETRIES, WEBHOOK_RETRY_INTERVALS),
    # or dead-letters at once when it was a `PermanentError` (`Outcome.permanent`).
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
    error: BaseException | None = None  # what ended the run, when a handler raised

    @property
    def permanent(self) -> bool:
        """True when a `PermanentError` ended it: dead-lettered at once, never retried."""
        return isinstance(self.error, PermanentError)

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
    """The outcome of one run of `entries`, of which `runs` are those that had their turn
    (every one, unless one raised `error`)."""
    names = _names(entries)
    results = [
        HandlerResult(names[i], run.state, run.error, run.entry.func) for i, run in enumerate(runs)
    ]
    for index in range(len(runs), len(entries)):
        results.append(HandlerResult(names[index], HandlerState.NOT_RUN, None, entries[index].func))
    if error is not None:
        status = Status.FAILED
    elif not entries:
        status = Status.IGNORED
    elif any(run.state is HandlerState.DONE for run in runs):
        status = Status.DONE
    else:
        status = Status.STALE
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
