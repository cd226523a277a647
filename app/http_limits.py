"""The limits of the HTTP guard (`app/http_guard.py`), one per process, and what its
refusals say: JSON `{"detail": ...}` as every other refusal, with `connection: close`."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from uvicorn._types import ASGIReceiveCallable, ASGISendCallable, Scope

from app.logs import configure_logging, logger
from app.metrics import CONNECTIONS_CUT
from app.process_settings import shared_settings
from app.settings import ConfigError, Settings

LIMITS = "webhook.http_limits"  # the key of the process's `Limits` in uvicorn's app_state


@dataclass(frozen=True, slots=True)
class Limits:
    max_header_bytes: int
    max_headers: int
    header_timeout: float
    body_timeout: float
    body_bytes_per_check: int
    max_connections: int

    @classmethod
    def of(cls, settings: Settings) -> Limits:
        return cls(
            settings.webhook_max_header_bytes,
            settings.webhook_max_headers,
            settings.webhook_header_timeout,
            settings.webhook_body_timeout,
            int(settings.webhook_body_min_rate * settings.webhook_body_timeout),
            settings.webhook_max_connections,
        )


def process_limits(app_state: dict[str, Any]) -> Limits:
    """The limits of this process, made once from its settings."""
    limits = app_state.get(LIMITS)
    if not isinstance(limits, Limits):
        configure_logging()  # under --lifespan off, this may be the process's first line
        try:
            settings = shared_settings(app_state)
        except ConfigError:
            # Under --lifespan off, the app logs why and answers 503: the documented
            # defaults hold meanwhile.
            settings = Settings.model_construct()
        limits = app_state[LIMITS] = Limits.of(settings)
    return limits


def _answer(status: int, detail: str) -> tuple[list[tuple[bytes, bytes]], bytes]:
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    return [*headers, (b"connection", b"close")], body


def _wire(status: int, detail: str) -> bytes:
    headers, body = _answer(status, detail)
    head = b"".join(b"%s: %s\r\n" % pair for pair in headers)
    line = f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n".encode()
    return line + head + b"\r\n" + body


TOO_LARGE = _wire(431, "request headers too large")
TOO_SLOW = _wire(408, "request headers not received in time")
TOO_MANY = _wire(503, "too many connections; retry later")
_TOO_MANY_HEADERS = _answer(431, "too many request headers")


class Tally:
    """Cuts, by reason, as one log line a second at most: at accept, a flood of refused
    connections costs next to nothing, and must not cost a log line each."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.said: dict[str, float] = {}

    def cut(self, reason: str, client: object) -> None:
        CONNECTIONS_CUT.labels(reason).inc()
        self.counts[reason] = self.counts.get(reason, 0) + 1
        now = time.monotonic()
        if now - self.said.get(reason, 0.0) >= 1.0:
            count, self.counts[reason], self.said[reason] = self.counts[reason], 0, now
            peer = ":".join(map(str, client)) if isinstance(client, tuple) else "?"
            logger.warning("connection cut", extra={"reason": reason, "count": count, "last": peer})


TALLY = Tally()


async def too_many_headers(
    scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
) -> None:
    """The app of a request with too many headers: 431, and uvicorn closes the connection."""
    TALLY.cut("too_many_headers", scope.get("client"))
    headers, body = _TOO_MANY_HEADERS
    await send({"type": "http.response.start", "status": 431, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})
