"""A delivery's span says how many events a batch request carried."""

from __future__ import annotations

from opentelemetry.sdk.trace import TracerProvider

from app.delivery_trace import OtelDeliverySpan
from app.providers.base import Delivery


def test_a_batch_deliverys_span_carries_its_size_and_a_single_ones_does_not() -> None:
    tracer = TracerProvider().get_tracer("test")
    batch = OtelDeliverySpan(tracer, tracer.start_span("delivery"))
    items = (Delivery("psp_1", "AUTHORISATION"), Delivery("psp_2", "CAPTURE"))
    batch.event("adyen", Delivery("psp_1", "AUTHORISATION", batch=items))
    single = OtelDeliverySpan(tracer, tracer.start_span("delivery"))
    single.event("adyen", Delivery("psp_3", "AUTHORISATION"))
    assert batch.span.attributes is not None and single.span.attributes is not None
    assert batch.span.attributes["webhook.batch_size"] == 2
    assert "webhook.batch_size" not in single.span.attributes
