"""What one HTTP connection may cost the `web:` process before its request reaches the app.

uvicorn's httptools protocol keeps a request head of any size (tens of MB), waits forever
for a head or a body that trickles in, and takes every connection the kernel hands it,
each a file descriptor. `GuardedHttpToolsProtocol` is that protocol with bounds
(`uvicorn --http app.http_guard:GuardedHttpToolsProtocol`, in the Procfile):

- the head (request line and headers), and a chunked body's trailers: at most
  WEBHOOK_MAX_HEADER_BYTES, counted as the bytes arrive, so a larger one is refused (431)
  before more is read; at most WEBHOOK_MAX_HEADERS headers (431, the body left unread);
- WEBHOOK_HEADER_TIMEOUT seconds from a connection's opening, or from the first byte of
  the next request on a keep-alive connection, to the head's end (408, then closed);
- a body must keep coming: every WEBHOOK_BODY_TIMEOUT seconds, one that has not ended must
  have brought WEBHOOK_BODY_MIN_RATE bytes a second since the last check, or the connection
  is closed (the app sees a disconnect); one still coming once its request is answered is
  closed at the next check;
- WEBHOOK_MAX_CONNECTIONS per process: past it, an idle keep-alive connection is closed to
  make room (as nginx does), or else the new one is answered 503 and closed at once, so
  its descriptor is free again. uvicorn's --limit-concurrency answers 503 only once a head
  has arrived, holding the socket while it trickles.

The limits, one set per process, and the refusals' words are in `app/http_limits.py`.
The fast path stays httptools': per read, a length sum and a comparison; per request, no
timer unless a head or a body does not arrive whole in one read (the head's first deadline,
from the connection's opening, is one timer per connection).

uvicorn internals relied on (uvicorn 0.54; pinned by tests/test_uvicorn_seams.py):
`HttpToolsProtocol`'s constructor; its parser callbacks `on_headers_complete`, `on_body` and
`on_message_complete`, and `on_response_complete`, which a request's cycle calls when its
answer is sent; its attributes `headers` (the head's list, whole at `on_headers_complete`),
`app` (read there to start the request, as uvicorn picks its own 503 app for
--limit-concurrency), `cycle` (its `response_complete`), `connections` (the server's set of
every open connection), `flow.read_paused`, `transport`, `loop` and `client`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from app.http_limits import TALLY, TOO_LARGE, TOO_MANY, TOO_SLOW, process_limits, too_many_headers

IDLE = "webhook.idle_connections"  # the key of the process's idle ones in uvicorn's app_state


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.limits = process_limits(app_state)
        # The process's idle keep-alive connections, longest idle first: room at the cap.
        self.idle_ones: dict[GuardedHttpToolsProtocol, None] = app_state.setdefault(IDLE, {})
        self.is_idle = False
        self.deadline: asyncio.TimerHandle | None = None
        # Bytes received on the connection; where the head being read began (reading_head),
        # where the last body bytes arrived, where the last body check was.
        self.received = self.head_from = self.body_seen = self.body_mark = 0
        self.reading_head = True

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.limits.max_connections and not self._make_room():
            TALLY.cut("too_many_connections", self.client)
            transport.write(TOO_MANY)
            transport.close()
            return
        self.deadline = self.loop.call_later(self.limits.header_timeout, self._head_too_slow)

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_deadline()
        self._not_idle()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.is_idle:
            self._not_idle()
        self.received += len(data)
        if self.reading_head and self.received - self.head_from > self.limits.max_header_bytes:
            # Read no further than the limit: the head may still end within it.
            room = self.limits.max_header_bytes - (self.received - len(data) - self.head_from)
            head_from = self.head_from
            self._feed(data[:room])
            if self.reading_head and self.head_from == head_from:
                self._cut("header_too_large", TOO_LARGE)
                return
            if self.transport.is_closing():
                return
            data = data[room:]
        self._feed(data)

    def _feed(self, data: bytes) -> None:
        super().data_received(data)
        if self.transport.is_closing():
            return
        if not self.reading_head and self.received - self.body_seen > self.limits.max_header_bytes:
            self._cut("trailers_too_large")  # bytes that bring no body: a trailer section
        elif self.deadline is None:
            # What this read left unfinished gets its deadline; a request that came whole
            # in it (the usual delivery) never needs one.
            if not self.reading_head:
                self.body_mark = self.received
                self.deadline = self.loop.call_later(self.limits.body_timeout, self._check_body)
            elif self.received > self.head_from:
                self.deadline = self.loop.call_later(
                    self.limits.header_timeout, self._head_too_slow
                )

    def on_headers_complete(self) -> None:
        self.reading_head = False
        self.body_seen = self.received
        self._stop_deadline()
        if len(self.headers) <= self.limits.max_headers:
            super().on_headers_complete()
            return
        # uvicorn reads `self.app` here to start the request: this request's is the 431.
        app, self.app = self.app, too_many_headers
        try:
            super().on_headers_complete()
        finally:
            self.app = app

    def on_body(self, body: bytes) -> None:
        self.body_seen = self.received
        super().on_body(body)

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self.reading_head = True
        self.head_from = self.received
        self._stop_deadline()
        self._now_idle()  # if it was answered before its body ended

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._now_idle()

    def _stop_deadline(self) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None

    def _head_too_slow(self) -> None:
        self.deadline = None
        self._cut("header_timeout", TOO_SLOW)

    def _check_body(self) -> None:
        self.deadline = None
        if self.cycle is not None and self.cycle.response_complete:
            self._cut("unread_body")  # answered already: nobody waits for the rest
            return
        slow = self.received - self.body_mark < self.limits.body_bytes_per_check
        if slow and not self.flow.read_paused:  # paused, it is we who do not read
            self._cut("body_timeout")
            return
        self.body_mark = self.received
        self.deadline = self.loop.call_later(self.limits.body_timeout, self._check_body)

    def _cut(self, reason: str, answer: bytes = b"") -> None:
        """Close the connection; in a head, with `answer` unless a response is under way."""
        if self.transport.is_closing():
            return
        TALLY.cut(reason, self.client)
        if answer and self.reading_head and (self.cycle is None or self.cycle.response_complete):
            self.transport.write(answer)
        self.transport.close()

    def _make_room(self) -> bool:
        """Close the longest idle keep-alive connection, if there is one, for this one."""
        if not self.idle_ones:
            return False
        other = next(iter(self.idle_ones))
        other._not_idle()
        other.transport.close()
        return True

    def _now_idle(self) -> None:
        """Idle, if the last request has ended and been answered (`cycle` is the last one
        read: a pipelined request waiting its turn is not answered), and nothing of a next
        one has come."""
        if (
            self.reading_head
            and self.received == self.head_from
            and self.cycle is not None
            and self.cycle.response_complete
            and not self.transport.is_closing()
        ):
            self.is_idle = True
            self.idle_ones[self] = None

    def _not_idle(self) -> None:
        self.is_idle = False
        self.idle_ones.pop(self, None)
