"""The OpenTelemetry SDK of one process, from the standard OTEL_* variables (the `otel` extra).

Imported only when tracing is on (`app/tracing.py`). What the SDK reads itself, it reads:
OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the resource), OTEL_TRACES_SAMPLER and its
argument (the sampler), OTEL_EXPORTER_OTLP_* (the OTLP/HTTP exporter), OTEL_BSP_* (the batch
processor). Two choices are ours:
- Redis commands are traced (`opentelemetry-instrumentation-redis`) only inside a trace
  that is already sampled: a command outside any (the worker's blocking wait for work, its
  heartbeats and maintenance) would otherwise start a trace of its own every few seconds.
  The instrumentation sets its attributes after the sampler has decided, so it is given a
  provider of its own instead of a sampler that looks at them.
- Spans leave through the SDK's batch processor, whatever the exporter: a delivery never
  waits for an export, and an unreachable collector costs the processor's thread, not a
  request.
"""

from __future__ import annotations

import os

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.instrumentation.redis import RedisInstrumentor
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ParentBased
from opentelemetry.trace import Link, SpanContext
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

SCOPE = "webhook-receiver"
_PROPAGATOR = TraceContextTextMapPropagator()
_provider: TracerProvider | None = None


def _exporters() -> list[SpanExporter]:
    names = [n.strip().lower() for n in os.environ.get("OTEL_TRACES_EXPORTER", "").split(",")]
    found: list[SpanExporter] = []
    if "otlp" in names:  # over http/protobuf: the protocol was checked at startup
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        found.append(OTLPSpanExporter())
    if "console" in names:
        found.append(ConsoleSpanExporter())
    return found


def provider(service: str) -> TracerProvider:
    """Built once per process, and made the global provider (the instrumentations use it)."""
    global _provider
    if _provider is not None:
        return _provider
    named = {} if os.environ.get("OTEL_SERVICE_NAME") else {SERVICE_NAME: service}
    resource = Resource.create(named)
    built = TracerProvider(resource=resource)  # its sampler: OTEL_TRACES_SAMPLER's
    # Redis's spans through a provider of their own, on the same processors, that starts
    # no trace: a command is traced as a child of a sampled span, or not at all.
    inside = TracerProvider(resource=resource, sampler=ParentBased(ALWAYS_OFF))
    for exporter in _exporters():
        processor = BatchSpanProcessor(exporter)
        built.add_span_processor(processor)
        inside.add_span_processor(processor)
    trace.set_tracer_provider(built)
    RedisInstrumentor().instrument(tracer_provider=inside, response_hook=_pipeline_named)
    _provider = built
    return built


def _pipeline_named(span: trace.Span, instance: object, response: object) -> None:
    """A pipeline's span is named after every command in it (the settlement's name ran to
    1.7 KB, each different): `PIPELINE`, with its length in `db.redis.pipeline_length`."""
    if " " in getattr(span, "name", ""):
        span.update_name("PIPELINE")


def traceparent_of(span: trace.Span) -> str:
    """The W3C `traceparent` of a span, sampled or not: a delivery the receiver's sampler
    left out carries that decision to the worker, whose spans then follow it. (An invalid
    span context, which our SDK tracers never make, is injected as nothing: "".)"""
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier, trace.set_span_in_context(span))
    return carrier.get("traceparent", "")


def context_of(traceparent: str) -> SpanContext | None:
    """The span context a `traceparent` names; None when it is malformed or empty."""
    if not traceparent:
        return None
    found = trace.get_current_span(_PROPAGATOR.extract({"traceparent": traceparent}))
    span_context = found.get_span_context()
    return span_context if span_context.is_valid else None


def parent(traceparent: str) -> Context:
    """A context whose parent is the span `traceparent` names; a new root when none."""
    span_context = context_of(traceparent)
    if span_context is None:
        return Context()
    return trace.set_span_in_context(trace.NonRecordingSpan(span_context), Context())


def link(traceparent: str, **attributes: str) -> list[Link]:
    span_context = context_of(traceparent)
    return [] if span_context is None else [Link(span_context, attributes or None)]
