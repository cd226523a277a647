"""The worker's spans with tracing on, built in-process on an in-memory exporter: what a
handler's span says of how it ended. (The spans of whole deliveries, from the real
processes to a collector: `test_tracing.py`.)"""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from app.turns import HandlerState, cut_error
from workers.event import Event
from workers.registry import Registered
from workers.runtime.attempt import HandlerRun, error_line
from workers.runtime.otel_spans import OtelSpans


def sync_crm(event: Event) -> None:
    """The handler the spans are named after (never run here)."""


@pytest.mark.parametrize(
    "error",
    [RuntimeError(), RuntimeError("downstream answered 502"), ValueError("x" * 600)],
    ids=["no message", "a message", "a long message"],
)
def test_a_failed_handlers_span_words_its_error_as_the_ledger_does(error: Exception) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    spans = OtelSpans(provider)
    with spans.handler("tests.sync_crm") as ended:
        ended(HandlerRun(Registered(sync_crm), HandlerState.FAILED, error))
    [span] = exporter.get_finished_spans()
    assert span.status.status_code == StatusCode.ERROR
    assert span.status.description == cut_error(error_line(error))
