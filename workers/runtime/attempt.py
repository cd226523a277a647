"""How one attempt's handler turns add up: which handlers it runs, what the job raises when
some fail, and the word it returns when none does. `deliver.py` runs the attempt; the
pytest plugin (`workers/testing/`) reports its outcomes with these same rules.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.jobstate import EventStatus
from app.turns import FAILURES, HandlerState
from workers.event import PermanentError
from workers.registry import HandlerRun, HandlersFailed, Registered


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


def failure_ends_event(error: BaseException) -> bool:
    """True when the event is dead-lettered now, whatever its retry budget holds."""
    return isinstance(error, PermanentError) or getattr(error, "permanent", False) is True


def final_status(states: dict[str, HandlerState]) -> EventStatus:
    found = set(states.values())
    if HandlerState.DONE in found:
        return EventStatus.DONE
    return EventStatus.STALE if HandlerState.STALE in found else EventStatus.IGNORED


def error_line(error: BaseException | None) -> str:
    if error is None:
        return ""
    message = str(error)
    return f"{type(error).__name__}: {message}" if message else type(error).__name__
