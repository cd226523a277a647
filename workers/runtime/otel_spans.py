"""The worker's spans with tracing on (`workers/runtime/spans.py` says what each one is).

An attempt's span is a child of the span in `JobMeta.trace`: the receiver's, so that a
delivery, its retries and their handlers read as one trace. A requeue (from the dead
letters, by any tool) or a replay from the ledger leaves the event's trace in
`JobMeta.trace_link`; the next attempt then starts a short `webhook requeue` (or
`webhook replay`) span in a trace of its own, linked to the event's first one, makes it the
event's trace, and is its child.

Attributes carry the source, event id and type, the attempt, the handler's name and how it
ended (its error's first line, cut as the ledger cuts it): never the payload or a header.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer
from rq.job import Job

from app.jobstate import JobMeta
from app.otel_setup import SCOPE, link, parent, traceparent_of
from app.turns import cut_error
from workers.runtime.attempt import HandlerRun, error_line
from workers.runtime.retries import retry_delay

if TYPE_CHECKING:  # `spans` imports this module, when tracing is on
    from workers.runtime.spans import AttemptSpan, BatchSpan

_QUIET: dict[str, Any] = {"record_exception": False, "set_status_on_exception": False}


class OtelBatch:
    def __init__(self, tracer: Tracer, span: Span) -> None:
        self.tracer = tracer
        self.span = span
        self.traceparent = traceparent_of(span)

    def step(self, name: str) -> AbstractContextManager[Any]:
        return self.tracer.start_as_current_span(
            f"webhook {name}", context=trace.set_span_in_context(self.span, Context())
        )

    def end(self) -> None:
        self.span.end()


class OtelAttempt:
    def __init__(self, span: Span) -> None:
        self.span = span

    def ended(self, job: Job, meta: JobMeta, ok: bool, error: str) -> None:
        if ok:  # `deliver` wrote its outcome in the job's meta
            outcome = str(job.meta.get("state") or meta.state)
        elif job.retries_left and job.retries_left > 0:
            outcome = "retry"
            delay = retry_delay(job)
            assert delay is not None  # None only with no retry left
            self.span.set_attribute("webhook.retry_in_s", delay)
        else:
            outcome = "dead_letter"
        self.span.set_attribute("webhook.outcome", outcome)
        if not ok:
            self.span.set_status(Status(StatusCode.ERROR, cut_error(error)))


class OtelSpans:
    def __init__(self, provider: TracerProvider) -> None:
        self.provider = provider
        self.tracer = provider.get_tracer(SCOPE)

    def batch(self, size: int, take_started_ns: int, take_ended_ns: int) -> BatchSpan:
        span = self.tracer.start_span(
            "webhook batch",
            context=Context(),
            start_time=take_started_ns,
            attributes={"webhook.batch_size": size},
        )
        take = self.tracer.start_span(
            "webhook take",
            context=trace.set_span_in_context(span, Context()),
            start_time=take_started_ns,
        )
        take.end(end_time=take_ended_ns)
        return OtelBatch(self.tracer, span)

    @contextmanager
    def attempt(self, job: Job, meta: JobMeta, batch: str, replayed: bool) -> Iterator[AttemptSpan]:
        if meta.trace_link:
            self._start_again(meta, "replay" if replayed else "requeue")
        started = datetime.now(UTC)
        attributes: dict[str, Any] = {
            "webhook.source": meta.source,
            "webhook.event_id": meta.event_id,
            "webhook.event_type": meta.type,
            "webhook.attempt": meta.attempts,
            "webhook.requeues": meta.requeues,
            "messaging.system": "rq",
            "messaging.destination.name": job.origin,
            "messaging.message.id": job.id,
        }
        if job.enqueued_at is not None:
            attributes["webhook.queue_wait_s"] = _seconds(started, job.enqueued_at)
        if meta.attempts - meta.budget_start > 1 and job.ended_at is not None:
            # The retry's backoff as waited: from the previous attempt's end to this start.
            attributes["webhook.backoff_s"] = _seconds(started, job.ended_at)
        with self.tracer.start_as_current_span(
            "webhook attempt",
            context=parent(meta.trace),
            kind=SpanKind.CONSUMER,
            links=link(batch, **{"webhook.link": "batch"}),
            attributes=attributes,
            **_QUIET,
        ) as span:
            yield OtelAttempt(span)

    def _start_again(self, meta: JobMeta, why: str) -> None:
        """The requeue's (or replay's) own trace, linked to the event's first one."""
        span = self.tracer.start_span(
            f"webhook {why}",
            context=Context(),
            kind=SpanKind.PRODUCER,
            links=link(meta.trace_link, **{"webhook.link": "original"}),
            attributes={
                "webhook.source": meta.source,
                "webhook.event_id": meta.event_id,
                "webhook.event_type": meta.type,
                "webhook.requeues": meta.requeues,
            },
        )
        span.end()
        meta.trace, meta.trace_link = traceparent_of(span), ""

    def handler(self, name: str) -> AbstractContextManager[Callable[[HandlerRun], None]]:
        return self._handler(name)

    @contextmanager
    def _handler(self, name: str) -> Iterator[Callable[[HandlerRun], None]]:
        with self.tracer.start_as_current_span(
            f"handler {name}", attributes={"webhook.handler": name}, **_QUIET
        ) as span:

            def ended(run: HandlerRun) -> None:
                span.set_attribute("webhook.handler_state", run.state.value)
                if run.error is not None:
                    span.set_status(Status(StatusCode.ERROR, cut_error(error_line(run.error))))

            yield ended

    def shutdown(self) -> None:
        self.provider.shutdown()


def _seconds(now: datetime, then: datetime) -> float:
    # A job's dates are read with their time zone (`take.read_job`, RQ's `utcparse`).
    return round((now - then).total_seconds(), 3)
