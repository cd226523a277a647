"""An OTLP/HTTP trace collector on loopback: what the real processes export, decoded.

It answers `POST /v1/traces` as a collector does (protobuf in, an empty
`ExportTraceServiceResponse` out) and keeps every span, flattened, for a test to read.
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email.message import Message
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.loopback import posts_served
from tests.processes import wait_until


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in any_value.array_value.values]
    return getattr(any_value, kind) if kind else None


@dataclass(frozen=True)
class Span:
    service: str
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int
    attributes: dict[str, Any]
    links: list[tuple[str, str, dict[str, Any]]]  # (trace id, span id, attributes)
    status: int  # 0 unset, 1 ok, 2 error
    status_message: str
    start_ns: int
    end_ns: int
    raw: bytes  # the span as exported, for the secret scan

    def attr(self, name: str) -> Any:
        return self.attributes.get(name)


@dataclass
class Collector:
    port: int = 0
    spans: list[Span] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def take(self, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        found = []
        for resource_spans in request.resource_spans:
            attributes = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            service = str(attributes.get("service.name", ""))
            for scope_spans in resource_spans.scope_spans:
                for s in scope_spans.spans:
                    found.append(
                        Span(
                            service=service,
                            name=s.name,
                            trace_id=s.trace_id.hex(),
                            span_id=s.span_id.hex(),
                            parent_id=s.parent_span_id.hex(),
                            kind=s.kind,
                            attributes={a.key: _value(a.value) for a in s.attributes},
                            links=[
                                (
                                    link.trace_id.hex(),
                                    link.span_id.hex(),
                                    {a.key: _value(a.value) for a in link.attributes},
                                )
                                for link in s.links
                            ],
                            status=s.status.code,
                            status_message=s.status.message,
                            start_ns=s.start_time_unix_nano,
                            end_ns=s.end_time_unix_nano,
                            raw=s.SerializeToString(),
                        )
                    )
        with self.lock:
            self.bodies.append(body)
            self.spans.extend(found)

    def all(self) -> list[Span]:
        with self.lock:
            return list(self.spans)

    def named(self, name: str, **attributes: Any) -> list[Span]:
        return [
            s
            for s in self.all()
            if s.name == name and all(s.attributes.get(k) == v for k, v in attributes.items())
        ]

    def wait_for(
        self, check: Callable[[list[Span]], bool], what: str, timeout: float = 30
    ) -> list[Span]:
        wait_until(lambda: check(self.all()), timeout, what)
        return self.all()

    def trace(self, trace_id: str) -> list[Span]:
        return [s for s in self.all() if s.trace_id == trace_id]


def serve() -> Iterator[Collector]:
    collector = Collector()
    reply = ExportTraceServiceResponse().SerializeToString()

    def answer(path: str, headers: Message, body: bytes) -> tuple[bytes, str]:
        if headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        if path == "/v1/traces":
            collector.take(body)
        return reply, "application/x-protobuf"

    with posts_served(answer) as port:
        collector.port = port
        yield collector
