"""The worker's spans, as the runner and the batch see them: none at all when tracing is off.

Off (`app/tracing.py` says when), the worker holds `NO_SPANS`, which imports nothing of
OpenTelemetry and whose spans are shared objects that do nothing. On, they are
`workers/runtime/otel_spans.py`'s: per batch, a span of the shared work (take, begin,
settle); per job, a span of the attempt (a child of the receiver's span, through
`JobMeta.trace`), linked to its batch's; per handler, a span inside the attempt. Both
worker modes make the same spans: in fork mode the child makes the attempts' and
handlers', and the batch's context reaches it with the batch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol

from app.settings import Settings
from app.tracing import start_sdk

if TYPE_CHECKING:
    from rq.job import Job

    from app.jobstate import JobMeta
    from workers.runtime.attempt import HandlerRun

_NOTHING: AbstractContextManager[None] = contextlib.nullcontext()


class BatchSpan(Protocol):
    traceparent: str  # what the child links each attempt to ('' when off)

    def step(self, name: str) -> AbstractContextManager[None]: ...

    def end(self) -> None: ...


class AttemptSpan(Protocol):
    def ended(self, job: Job, meta: JobMeta, ok: bool, error: str) -> None: ...


class WorkerSpans(Protocol):
    def batch(self, size: int, take_started_ns: int, take_ended_ns: int) -> BatchSpan: ...

    def attempt(
        self, job: Job, meta: JobMeta, batch: str, replayed: bool
    ) -> AbstractContextManager[AttemptSpan]:
        """The attempt's span, current while its handlers run. A requeued or replayed
        event's first attempt first starts the new trace (`meta.trace_link`)."""
        ...

    def handler(self, name: str) -> AbstractContextManager[Callable[[HandlerRun], None]]:
        """A handler's span; the callable it gives records how the handler ended."""
        ...

    def shutdown(self) -> None: ...


class NoSpan:
    traceparent = ""

    def step(self, name: str) -> AbstractContextManager[None]:
        return _NOTHING

    def end(self) -> None:
        return None

    def ended(self, job: Job, meta: JobMeta, ok: bool, error: str) -> None:
        return None


def _ignore(run: HandlerRun) -> None:
    return None


NO_SPAN = NoSpan()
_NO_ATTEMPT: AbstractContextManager[AttemptSpan] = contextlib.nullcontext(NO_SPAN)
_NO_HANDLER: AbstractContextManager[Callable[[HandlerRun], None]] = contextlib.nullcontext(_ignore)


class NoSpans:
    def batch(self, size: int, take_started_ns: int, take_ended_ns: int) -> BatchSpan:
        return NO_SPAN

    def attempt(
        self, job: Job, meta: JobMeta, batch: str, replayed: bool
    ) -> AbstractContextManager[AttemptSpan]:
        return _NO_ATTEMPT

    def handler(self, name: str) -> AbstractContextManager[Callable[[HandlerRun], None]]:
        return _NO_HANDLER

    def shutdown(self) -> None:
        return None


NO_SPANS = NoSpans()


def worker_spans(settings: Settings) -> WorkerSpans:
    provider = start_sdk(settings.otel, "webhook-worker")
    if provider is None:
        return NO_SPANS
    from workers.runtime.otel_spans import OtelSpans

    return OtelSpans(provider)
