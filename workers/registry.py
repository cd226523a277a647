"""Handler registration and dispatch by (source, event type), with "*" matching every type."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from workers.event import Event
from workers.versions import Selector, VersionGuard

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


def run_handler(func: HandlerFunc, event: Event) -> None:
    result = func(event)
    if inspect.isawaitable(result):
        asyncio.run(_await(result))


async def _await(awaitable: Awaitable[None]) -> None:
    await awaitable


registry = HandlerRegistry()
handler = registry.handler
