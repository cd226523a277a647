"""Handler registration and dispatch by (source, event type), with "*" matching every type.

What one attempt then does with the handlers found (runs each in turn, adds their ends up)
is `workers/runtime/attempt.py`'s.
"""

from __future__ import annotations

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
    name: str = ""  # `handler_name(func)`, what its state is recorded under

    def __post_init__(self) -> None:
        if not self.name:
            object.__setattr__(self, "name", handler_name(self.func))


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


registry = HandlerRegistry()
handler = registry.handler
