"""The receiver's spans (tracing on): one per request to a source's URL, its steps as children.

The delivery route bypasses FastAPI (`app/ingress.py`), so its span is made here rather
than by the ASGI instrumentation. A `traceparent` the sender sent is untrusted: anyone can
post one, and a parent chosen by the sender would put our spans into a trace of theirs. It
is recorded as a link, and the delivery's span always starts a trace of its own.

Attributes name the source, provider, event id and type, and the outcome: never a
secret, a signature header, the payload or a raw provider header.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING

from opentelemetry.context import Context
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from app.errors import WebhookError
from app.otel_setup import SCOPE, link, traceparent_of

if TYPE_CHECKING:
    from app.providers import Delivery
    from app.tracing import DeliverySpan  # which imports this module, when tracing is on

ROUTE = "/webhooks/{source}"


class OtelDeliverySpan:
    __slots__ = ("span", "tracer")

    def __init__(self, tracer: Tracer, span: Span) -> None:
        self.tracer = tracer
        self.span = span

    def step(self, name: str) -> AbstractContextManager[None]:
        return _step(self.tracer, name)

    def event(self, provider: str, delivery: Delivery) -> None:
        self.span.set_attributes(
            {
                "webhook.provider": provider,
                "webhook.event_id": delivery.event_id,
                "webhook.event_type": delivery.event_type,
            }
        )
        if delivery.batch:
            self.span.set_attribute("webhook.batch_size", len(delivery.batch))

    def ended(self, outcome: str, status: int, reason: str = "") -> None:
        self.span.set_attributes({"webhook.outcome": outcome, "http.response.status_code": status})
        if reason:
            self.span.set_attribute("webhook.reason", reason)
        if status >= 500:
            self.span.set_status(Status(StatusCode.ERROR, reason or None))

    @property
    def traceparent(self) -> str:
        return traceparent_of(self.span)


@contextmanager
def _step(tracer: Tracer, name: str) -> Iterator[None]:
    with tracer.start_as_current_span(
        f"webhook {name}", record_exception=False, set_status_on_exception=False
    ) as span:
        try:
            yield
        except WebhookError as exc:
            # Its reason, not its message: a message may quote what the sender sent.
            span.set_status(Status(StatusCode.ERROR, exc.reason))
            raise
        except BaseException as exc:
            span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise


class DeliveryTracing:
    def __init__(self, provider: TracerProvider) -> None:
        self.provider = provider
        self.tracer = provider.get_tracer(SCOPE)

    @contextmanager
    def delivery(self, source: str, headers: list[tuple[bytes, bytes]]) -> Iterator[DeliverySpan]:
        sent = next((v for k, v in headers if k == b"traceparent"), b"")
        links = link(sent.decode("latin-1")[:256], **{"webhook.link": "sender"}) if sent else []
        with (
            self.tracer.start_as_current_span(
                f"POST {ROUTE}",
                context=Context(),  # never the sender's
                kind=SpanKind.SERVER,
                links=links,
                attributes={
                    "http.request.method": "POST",
                    "http.route": ROUTE,
                    "webhook.source": source[:100],
                },
                record_exception=False,
                set_status_on_exception=False,
            ) as span
        ):
            yield OtelDeliverySpan(self.tracer, span)

    def shutdown(self) -> None:
        self.provider.shutdown()
