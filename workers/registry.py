"""Handler registration and dispatch by (source, event type), with "*" matching every type."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

from workers.event import Event
from workers.versions import Selector, VersionGuard, newer_version

HandlerFunc = Callable[[Event], None] | Callable[[Event], Awaitable[None]]
F = TypeVar("F", bound=HandlerFunc)
WILDCARD = "*"


@dataclass(frozen=True, slots=True)
class Registered:
    func: HandlerFunc
    guard: VersionGuard | None = None


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
    ) -> Callable[[F], F]:
        """Register a function for one source and event type ("*": every type).

        With `entity` and `version` (dotted paths into the payload, or functions of the
        event), the function only runs for events newer than the last applied version of
        their entity; older ones settle as `stale`.
        """
        if (entity is None) != (version is None):
            raise ValueError("a version guard needs both entity= and version=")
        guard = None
        if entity is not None and version is not None:
            guard = VersionGuard(entity, version)

        def register(func: F) -> F:
            bucket = self._handlers.setdefault((source, event_type), [])
            if all(entry.func is not func for entry in bucket):
                bucket.append(Registered(func, guard))
            return func

        return register

    def handlers_for(self, source: str, event_type: str) -> list[Registered]:
        """The exact-type handlers, then the wildcard ones, in registration order."""
        exact = self._handlers.get((source, event_type), []) if event_type != WILDCARD else []
        return [*exact, *self._handlers.get((source, WILDCARD), [])]

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


class HandlerState(StrEnum):
    """How one handler's turn at an event ended."""

    DONE = "done"  # it returned
    FAILED = "failed"  # it (or its version guard) raised: the run stops there
    STALE = "stale"  # its version guard found this version, or a newer one, applied
    # Never reported by `run_handlers`: a handler after one that raised. The worker's
    # retry runs every handler again, so it is not skipped for good.
    NOT_RUN = "not_run"

    def __repr__(self) -> str:  # 'done', not <HandlerState.DONE: 'done'>, in a test's diff
        return repr(self.value)


@dataclass(frozen=True, slots=True)
class HandlerRun:
    entry: Registered
    state: HandlerState
    error: BaseException | None = None


def run_handlers(
    event: Event, entries: list[Registered], report: Callable[[HandlerRun], None] | None = None
) -> bool:
    """Run the handlers in order, as the worker's job does: a guarded one only when the
    event is newer than its entity's applied version, else it is stale; the first
    exception, from a handler or its guard, ends the run and propagates. True when a
    handler ran, False when every one was stale. `report` hears each handler's end: the
    pytest plugin's outcome is made of them, so it cannot drift from what the worker does."""
    ran = False
    for entry in entries:
        try:
            guard = entry.guard
            if guard is not None and not newer_version(event, guard.entity, guard.version):
                if report is not None:
                    report(HandlerRun(entry, HandlerState.STALE))
                continue
            run_handler(entry.func, event)
        except Exception as exc:
            if report is not None:
                report(HandlerRun(entry, HandlerState.FAILED, exc))
            raise
        ran = True
        if report is not None:
            report(HandlerRun(entry, HandlerState.DONE))
    return ran


def run_handler(func: HandlerFunc, event: Event) -> None:
    result = func(event)
    if inspect.isawaitable(result):
        asyncio.run(_await(result))


async def _await(awaitable: Awaitable[None]) -> None:
    await awaitable


registry = HandlerRegistry()
handler = registry.handler
