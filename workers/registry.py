"""Handler registration and dispatch by (source, event type), with "*" matching every type."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import TypeVar

from workers.event import Event

HandlerFunc = Callable[[Event], None] | Callable[[Event], Awaitable[None]]
F = TypeVar("F", bound=HandlerFunc)
WILDCARD = "*"


class HandlerRegistry:
    def __init__(self) -> None:
        self._handlers: dict[tuple[str, str], list[HandlerFunc]] = {}

    def handler(self, source: str, event_type: str = WILDCARD) -> Callable[[F], F]:
        """Register a function for one source and event type ("*": every type)."""

        def register(func: F) -> F:
            bucket = self._handlers.setdefault((source, event_type), [])
            if func not in bucket:
                bucket.append(func)
            return func

        return register

    def handlers_for(self, source: str, event_type: str) -> list[HandlerFunc]:
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
