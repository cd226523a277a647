"""Tracing on and off: the receiver's ingest and the worker's drain with tracing off (today's
code path: nothing of OpenTelemetry is loaded) and on (OTEL_TRACES_EXPORTER=otlp, exporting
over OTLP/HTTP to a no-op collector in the bench process), and off against off (A/A), which
is the noise band the on/off ratio is read against.

Each round runs the three setups (off, on, off again) one after the other on the same Redis
(appendfsync always), the order rotated every round so that each goes first in turn:
- ingest: the real receiver under the same wrk load as `bench/ingest.py`;
- drain: one worker in fork mode with the one no-op handler (`bench/noop_handler.py`), as
  the one-handler drain; with tracing on, every job carries a traceparent in its meta, as a
  receiver with tracing on writes it, so each attempt's span is a child of a remote parent.
The figures are the medians of the rounds' ratios. The collector answers every export 200
with an empty body and keeps its bytes; they are decoded into spans after each run, off its
clock, to show that the "on" runs exported (and how many spans, against the requests or
events that should have made them) and the "off" runs nothing.
"""

from __future__ import annotations

import collections
import gzip
import os
import tempfile
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from redis import Redis

from app.otel_setup import SCOPE
from bench.common import SECRET, summary
from bench.drain import worker_rate
from bench.ingest import compare, one_run

SETUPS = ("off", "on", "off_again")
# The span every delivery makes in the receiver, and every job's attempt in the worker.
DELIVERY_SPAN = "POST /webhooks/{source}"
ATTEMPT_SPAN = "webhook attempt"


class Collector:
    """A no-op OTLP/HTTP trace collector on 127.0.0.1: POST /v1/traces is answered 200 with
    an empty body; what came is kept until `take`."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.bodies: list[tuple[str, bytes]] = []
        self.other = 0  # requests that were not a POST to /v1/traces
        collector = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # the exporter keeps its connection

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with collector.lock:
                    if self.path == "/v1/traces":
                        collector.bodies.append((self.headers.get("Content-Encoding", ""), body))
                    else:
                        collector.other += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> Collector:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def take(self) -> dict[str, Any]:
        """What came since the last `take`: requests, bytes, and spans by name."""
        with self.lock:
            bodies, self.bodies = self.bodies, []
            other, self.other = self.other, 0
        return {
            "requests": len(bodies),
            "bytes": sum(len(body) for _, body in bodies),
            "spans": span_names(bodies),
            "other_requests": other,
        }


def span_names(bodies: list[tuple[str, bytes]]) -> dict[str, int]:
    """The spans in OTLP export requests, counted by name; those of another instrumentation
    (Redis's, named by their commands) by its scope's name."""
    names: collections.Counter[str] = collections.Counter()
    for encoding, body in bodies:
        if encoding == "gzip":
            body = gzip.decompress(body)
        elif encoding == "deflate":
            body = zlib.decompress(body)
        request = ExportTraceServiceRequest.FromString(body)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                if scope.scope.name == SCOPE:
                    names.update(span.name for span in scope.spans)
                else:
                    names[scope.scope.name] += len(scope.spans)
    return dict(names)


def order(round_: int) -> tuple[str, ...]:
    """The setups of a round, rotated by one each round: each goes first in turn."""
    shift = round_ % len(SETUPS)
    return SETUPS[shift:] + SETUPS[:shift]


def environments(endpoint: str) -> dict[str, dict[str, str]]:
    """Each setup's OTEL_* variables, set whatever the bench's own environment says."""
    off = {"OTEL_TRACES_EXPORTER": "none"}
    on = {
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_SDK_DISABLED": "false",
        "OTEL_TRACES_SAMPLER": "parentbased_always_on",
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{endpoint}/v1/traces",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
    }
    return {"off": off, "on": on, "off_again": off}


def tracing(
    redis_url: str, rounds: int, seconds: int, connections: int, threads: int, events: int
) -> dict[str, Any]:
    receiver = {"REDIS_URL": redis_url, "WEBHOOK_SIGNING_SECRET": SECRET}
    receiver["WEBHOOK_KEY_PREFIX"] = "bench"
    runs: dict[str, list[dict[str, Any]]] = {setup: [] for setup in SETUPS}
    rates: dict[str, list[float]] = {setup: [] for setup in SETUPS}
    ingest_exports, drain_exports = Exports(), Exports()
    loads = []  # the machine's 1-minute load average as each round starts
    Redis.from_url(redis_url).flushall()  # what a measure before left does not count
    with Collector() as collector, tempfile.TemporaryDirectory() as tmp:
        envs = environments(collector.endpoint)
        for round_ in range(rounds):
            loads.append(os.getloadavg()[0])
            # Each run's exports are taken once its process has ended: the receiver's lifespan
            # and the worker's burst end both export what the SDK still held.
            for setup in order(round_):
                collector.take()  # nothing left over counts for this run
                env, tag = {**receiver, **envs[setup]}, f"tracing_{setup}{round_}"
                run = one_run("app.main:app", env, Path(tmp), tag, seconds, connections, threads)
                Redis.from_url(redis_url).flushall()
                runs[setup].append(run)
                ingest_exports.add(setup, collector.take(), run["warm_up"] + run["requests"])
            for setup in order(round_):
                collector.take()
                on = setup == "on"
                rate = worker_rate(redis_url, events, "fork", 1, True, env=envs[setup], traced=on)
                rates[setup].append(rate)
                drain_exports.add(setup, collector.take(), events)
    return {
        "ingest": {**over_off(runs, "on"), **ingest_exports.figures(DELIVERY_SPAN)},
        "drain": {**summary(pairs(rates, "on")), **drain_exports.figures(ATTEMPT_SPAN)},
        "ingest_aa": over_off(runs, "off_again"),
        "drain_aa": summary(pairs(rates, "off_again")),
        # Every run's figure, round by round, for a reader who doubts a median.
        "ingest_rps": {setup: [run["rps"] for run in runs[setup]] for setup in SETUPS},
        "drain_events_per_s": rates,
        "load_average": loads,
    }


def over_off(runs: dict[str, list[dict[str, Any]]], measured: str) -> dict[str, Any]:
    return compare({measured: runs[measured], "off": runs["off"]}, measured, "off")


def pairs(rates: dict[str, list[float]], measured: str) -> list[tuple[float, float]]:
    return list(zip(rates[measured], rates["off"], strict=True))


class Exports:
    """What the collector received in one measure's runs, by setup."""

    def __init__(self) -> None:
        self.requests = 0
        self.bytes = 0
        self.spans: collections.Counter[str] = collections.Counter()
        self.made = 0  # requests sent (ingest) or jobs run (drain) in the "on" runs

    def add(self, setup: str, received: dict[str, Any], made: int) -> None:
        if received["other_requests"]:
            raise AssertionError(f"the collector got {received['other_requests']} odd requests")
        if setup != "on":
            # Off, nothing of OpenTelemetry runs: a single export means the bench is wrong.
            assert not received["requests"], f"tracing {setup} exported {received}"
            return
        assert received["spans"], "tracing on exported nothing: the bench measures no tracing"
        self.requests += received["requests"]
        self.bytes += received["bytes"]
        self.spans.update(received["spans"])
        self.made += made

    def figures(self, per: str) -> dict[str, Any]:
        """The exports of the "on" runs, and how many of the spans named `per` (one per
        request or job) arrived: under 1, the SDK's queue was full and dropped some."""
        return {
            "exports": self.requests,
            "export_bytes": self.bytes,
            "spans": sum(self.spans.values()),
            "span_names": dict(self.spans),
            "spans_per_item": sum(self.spans.values()) / self.made,
            "items_with_span": self.spans[per] / self.made,
        }
