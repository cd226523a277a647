"""An HTTP endpoint on loopback that hands every POST to the test: the fake collectors'
(OpenTelemetry's `tests/otel_collector.py`, Sentry's `tests/sentry_ingest.py`) one server."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# (path, headers, body) -> (the answer's body, its content type)
Answer = Callable[[str, Message, bytes], tuple[bytes, str]]


@contextmanager
def posts_served(answer: Answer) -> Iterator[int]:
    """Serve POSTs with `answer` until the block ends; yields the port."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            reply, content_type = answer(self.path, self.headers, self.rfile.read(length))
            self.send_response(200)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
