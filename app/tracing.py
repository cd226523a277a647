"""Traces (OpenTelemetry): off unless OTEL_TRACES_EXPORTER asks for them, and free when off.

Off (OTEL_TRACES_EXPORTER unset or `none`, or OTEL_SDK_DISABLED=true), nothing of
OpenTelemetry is imported: the receiver and the worker hold `NO_TRACING`, whose spans are
one shared object whose methods do nothing. On, the `otel` extra's SDK is built once per
process from the standard OTEL_* variables (`app/otel_setup.py`), and the spans are made by
`app/delivery_trace.py` (the receiver) and `workers/runtime/otel_spans.py` (the worker, as
`workers/runtime/spans.py` describes them).

One trace per delivery: the receiver's span, with verification and the claim as children;
its W3C `traceparent` rides in the job's meta (`JobMeta.trace`), written by the claim
script with the job, so every attempt's span in the worker, and each handler's inside it,
belongs to the same trace. A requeue or a replay starts a trace of its own, linked to the
event's first one (`JobMeta.trace_link`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from app.sources import ConfigError

if TYPE_CHECKING:
    from app.providers import Delivery

EXPORTERS = ("otlp", "console")
_NOTHING: AbstractContextManager[None] = contextlib.nullcontext()


def tracing_wanted(otel: Mapping[str, str]) -> bool:
    """True when the OTEL_* variables ask for traces; a name we cannot export to is refused."""
    if otel.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    names = [n.strip().lower() for n in otel.get("OTEL_TRACES_EXPORTER", "").split(",")]
    names = [n for n in names if n and n != "none"]
    if any(n not in EXPORTERS for n in names):
        raise ConfigError(
            f"OTEL_TRACES_EXPORTER: an exporter is not one of {', '.join(EXPORTERS)}, none"
        )
    return bool(names)


class DeliverySpan(Protocol):
    """The receiver's span of one request to a source's URL."""

    def step(self, name: str) -> AbstractContextManager[None]:
        """A child span (`verify`, `claim`) around one step of the request."""
        ...

    def event(self, provider: str, delivery: Delivery) -> None:
        """What the verified request turned out to be."""
        ...

    def ended(self, outcome: str, status: int, reason: str = "") -> None:
        """How it was answered: accepted, duplicate, handshake or rejected (with why)."""
        ...

    @property
    def traceparent(self) -> str:
        """The context the event's job carries to the worker ('' when off)."""
        ...


class Tracing(Protocol):
    """What a process traces with: spans of deliveries (the receiver), and the SDK's end."""

    def delivery(
        self, source: str, headers: list[tuple[bytes, bytes]]
    ) -> AbstractContextManager[DeliverySpan]: ...

    def shutdown(self) -> None:
        """Export what is still buffered (a process that ends, or a forked child)."""
        ...


class NoSpan:
    """Every span when tracing is off: one object, no state, no work."""

    traceparent = ""

    def step(self, name: str) -> AbstractContextManager[None]:
        return _NOTHING

    def event(self, provider: str, delivery: Delivery) -> None:
        return None

    def ended(self, outcome: str, status: int, reason: str = "") -> None:
        return None


NO_SPAN = NoSpan()
_NO_DELIVERY: AbstractContextManager[DeliverySpan] = contextlib.nullcontext(NO_SPAN)


class NoTracing:
    def delivery(
        self, source: str, headers: list[tuple[bytes, bytes]]
    ) -> AbstractContextManager[DeliverySpan]:
        return _NO_DELIVERY

    def shutdown(self) -> None:
        return None


NO_TRACING = NoTracing()


def tracing_problems(otel: Mapping[str, str]) -> list[str]:
    """What stops a process that traces (the receiver, the worker) from starting with these
    OTEL_* variables: an exporter we cannot export to, a protocol the otel extra does not
    speak, the extra not installed. Run at startup by both (`app/startup_checks.py`)."""
    try:
        if not tracing_wanted(otel):
            return []
    except ConfigError as exc:
        return [str(exc)]
    found = []
    names = {n.strip().lower() for n in otel.get("OTEL_TRACES_EXPORTER", "").split(",")}
    protocol = (
        otel.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or otel.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    ).strip()
    if "otlp" in names and protocol != "http/protobuf":
        variable = (
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
            if otel.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            else "OTEL_EXPORTER_OTLP_PROTOCOL"
        )
        found.append(
            f"{variable}: {protocol!r} is not supported; the otel extra exports over "
            "http/protobuf (an OTel Collector's port 4318)"
        )
    try:
        _import_sdk()
    except ImportError as exc:
        found.append(
            "OTEL_TRACES_EXPORTER is set, but OpenTelemetry is not installed: "
            f"pip install 'rq-webhook-receiver[otel]' ({exc.name} is missing)"
        )
    return found


def _import_sdk() -> Any:
    """Every module of the otel extra a tracing process imports."""
    import opentelemetry.exporter.otlp.proto.http.trace_exporter
    import opentelemetry.instrumentation.fastapi  # noqa: F401 - the receiver's routes

    from app import otel_setup

    return otel_setup


def start_sdk(otel: Mapping[str, str], service: str) -> Any | None:
    """The process's tracer provider, built once; None when tracing is off. `service` is
    the default of OTEL_SERVICE_NAME (`webhook-receiver`, `webhook-worker`). The process
    checked `tracing_problems` at its start; they are asked again here, for whoever builds
    a receiver or a worker without starting a process (the pytest plugin, a test)."""
    found = tracing_problems(otel)
    if found:
        raise ConfigError("; ".join(found))
    if not tracing_wanted(otel):
        return None
    # The SDK reads its variables from the environment alone: a `.env` line counts too,
    # below what the environment sets.
    for name, value in otel.items():
        os.environ.setdefault(name, value)
    return _import_sdk().provider(service)


def receiver_tracing(otel: Mapping[str, str]) -> Tracing:
    provider = start_sdk(otel, "webhook-receiver")
    if provider is None:
        return NO_TRACING
    from app.delivery_trace import DeliveryTracing

    return DeliveryTracing(provider)
