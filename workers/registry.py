"""Handler registration and dispatch by (source, event type), with "*" matching every type."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TypeVar

from rq.timeouts import JobTimeoutException

from app.turns import HandlerState
from workers import handler_loop
from workers.event import Event, PermanentError
from workers.versions import Selector, VersionGuard, newer_version

HandlerFunc = Callable[[Event], None] | Callable[[Event], Awaitable[None]]
F = TypeVar("F", bound=HandlerFunc)
WILDCARD = "*"


@dataclass(frozen=True, slots=True)
class Registered:
    func: HandlerFunc
    guard: VersionGuard | None = None
    name: str = ""  # `handler_name(func)`, what its state is recorded under

    def __post_init__(self) -> None:
        if not self.name:
            object.__setattr__(self, "name", handler_name(self.func))


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


class HandlerRegistry:
    def __init__(self) -> None:
        self._handlers: dict[tuple[str, str], list[Registered]] = {}

    def handler(
        self,
        source: str,
        event_type: str = WILDCARD,
        *,
        entity: Selector | None = None,
        version: Selector | None = None,
        name: str | None = None,
    ) -> Callable[[F], F]:
        """Register a function for one source and event type ("*": every type).

        With `entity` and `version` (dotted paths into the payload, or functions of the
        event), the function only runs for events newer than the last applied version of
        their entity; older ones settle as `stale`. `name` is what the worker records the
        handler's state under (default: its module and qualified name); it must stay the
        same across deploys, and belong to one handler.
        """
        if (entity is None) != (version is None):
            raise ValueError("a version guard needs both entity= and version=")
        guard = None
        if entity is not None and version is not None:
            guard = VersionGuard(entity, version)

        def register(func: F) -> F:
            entry = Registered(func, guard, name or _stable_name(func))
            self._check_name(source, event_type, entry)
            bucket = self._handlers.setdefault((source, event_type), [])
            for index, known in enumerate(bucket):
                if known.name == entry.name:  # the same definition, imported again
                    bucket[index] = entry
                    break
            else:
                bucket.append(entry)
            return func

        return register

    def _check_name(self, source: str, event_type: str, entry: Registered) -> None:
        """One name, one handler, among those that can match one event (its source, and
        its type or "*"): a succeeded handler is skipped by name on the retry, so another
        handler under its name would be skipped too, its failure never retried."""
        for (known_source, known_type), entries in self._handlers.items():
            same_type = known_type == event_type or WILDCARD in (known_type, event_type)
            if known_source != source or not same_type:
                continue
            for known in entries:
                if known.name == entry.name and not _same_definition(known.func, entry.func):
                    raise ValueError(
                        f"two handlers of {source!r} are named {entry.name!r} (each "
                        "handler's state is kept under its name): give one of them another "
                        "name with @handler(..., name=...)"
                    )

    def handlers_for(self, source: str, event_type: str) -> list[Registered]:
        """The exact-type handlers, then the wildcard ones, in registration order; a
        handler registered for both runs once, as the type's."""
        exact = self._handlers.get((source, event_type), []) if event_type != WILDCARD else []
        wildcard = self._handlers.get((source, WILDCARD), [])
        if not exact or not wildcard:
            return [*exact, *wildcard]
        names = {entry.name for entry in exact}
        return [*exact, *(entry for entry in wildcard if entry.name not in names)]

    def sources(self) -> set[str]:
        return {source for source, _ in self._handlers}

    def clear(self) -> None:
        self._handlers.clear()

    def snapshot(self) -> dict[tuple[str, str], list[Registered]]:
        """What is registered now, for `restore`: the pytest plugin drops the handlers a
        test registered in its body, and keeps those its modules registered on import."""
        return {key: list(entries) for key, entries in self._handlers.items()}

    def restore(self, snapshot: dict[tuple[str, str], list[Registered]]) -> None:
        self._handlers = {key: list(entries) for key, entries in snapshot.items()}


def _stable_name(func: HandlerFunc) -> str:
    if not hasattr(func, "__qualname__"):
        raise ValueError(
            f"{func!r} has no stable name (a functools.partial or a callable object): "
            "register a function, or give @handler(..., name=...)"
        )
    return handler_name(func)


def _same_definition(a: HandlerFunc, b: HandlerFunc) -> bool:
    """The same function, or the same module-level `def` run again (its module imported
    again). Two closures of one factory are two handlers, even from the same `def`."""
    if a is b:
        return True
    code_a, code_b = getattr(a, "__code__", None), getattr(b, "__code__", None)
    if code_a is None or code_b is None or "<locals>" in getattr(a, "__qualname__", ""):
        return False
    return (code_a.co_filename, code_a.co_firstlineno) == (
        code_b.co_filename,
        code_b.co_firstlineno,
    )


def handler_name(func: HandlerFunc) -> str:
    """What the worker records a handler's state under: its module and qualified name,
    which stay the same across a deploy."""
    module = getattr(func, "__module__", None) or "?"
    return f"{module}.{getattr(func, '__qualname__', None) or repr(func)}"


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


registry = HandlerRegistry()
handler = registry.handler
