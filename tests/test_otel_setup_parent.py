"""A worker's attempt span is a child of the trace its job names; a job that names none (a
receiver without tracing wrote it) or a damaged one starts a trace of its own."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider

from app.otel_setup import parent, traceparent_of

SENDER = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def test_an_attempt_of_a_job_with_a_traceparent_continues_that_trace() -> None:
    span = TracerProvider().get_tracer("test").start_span("attempt", context=parent(SENDER))
    assert span.parent is not None and span.parent.span_id == 0x00F067AA0BA902B7
    assert traceparent_of(span).startswith("00-4bf92f3577b34da6a3ce929d0e0e4736-")


@pytest.mark.parametrize("stored", ["", "00-not-a-trace"])
def test_an_attempt_of_a_job_without_a_usable_traceparent_starts_its_own_trace(
    stored: str,
) -> None:
    span = TracerProvider().get_tracer("test").start_span("attempt", context=parent(stored))
    assert span.parent is None and span.get_span_context().is_valid
