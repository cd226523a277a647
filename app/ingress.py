"""`POST /webhooks/{source}` straight from the ASGI server to the receiver.

Every delivery is this one request, and the framework's layers (five middlewares, the
router, the request and response objects) cost as much as the receiver's own work. The
ingress takes exactly that route in front of the FastAPI app and answers it itself, with
the same answers; every other request (probes, metrics, handshakes, replay) goes on to
FastAPI. `rejected` and `answer` are the one place that turns an outcome or a refusal
into bytes, for both.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

from starlette.requests import ClientDisconnect, Request

from app.errors import InternalError, QueueUnavailable, WebhookError
from app.logs import logger
from app.metrics import REJECTED
from app.tracing import NO_TRACING

if TYPE_CHECKING:
    from fastapi import FastAPI

    from app.receiver import Answer, Receiver

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
PREFIX = "/webhooks/"
JSON = b"application/json"
# As Starlette's JSONResponse renders a body; made once (json.dumps builds one per call).
_ANSWER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def reply_bytes(outcome: Answer) -> tuple[int, bytes, bytes, list[tuple[bytes, bytes]]]:
    """Status, media type, body and extra headers of a 200 answer."""
    if outcome.reply is not None:
        reply = outcome.reply
        headers = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in reply.headers]
        status = outcome.body.get("status")
        if status:  # a provider's own acknowledgement says nothing of ours: the header does
            headers.append((b"x-webhook-status", status.encode()))
        return reply.status, reply.media_type.encode("latin-1"), reply.body, headers
    body = _ANSWER.encode(outcome.body).encode()
    return 200, JSON, body, []


def label_of(receiver: Receiver | None, source: str) -> str:
    # Unknown names are not labels: a scanner must not create metric series at will.
    known = receiver is not None and source in receiver.verifiers
    return source if known else "(unknown)"


def rejected(receiver: Receiver | None, source: str, exc: WebhookError) -> bytes:
    """Count, log and word a refusal: `{"detail": ...}`."""
    REJECTED.labels(label_of(receiver, source), exc.reason).inc()
    logger.warning(
        "rejected",
        extra={
            "state": "rejected",
            "source": source,
            "reason": exc.reason,
            "status": exc.status_code,
            "detail": exc.detail,
        },
    )
    return _ANSWER.encode({"detail": exc.detail}).encode()


async def respond(
    send: Send,
    status: int,
    media_type: bytes,
    body: bytes,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    start = [(b"content-type", media_type), (b"content-length", str(len(body)).encode())]
    await send(
        {"type": "http.response.start", "status": status, "headers": start + (headers or [])}
    )
    await send({"type": "http.response.body", "body": body})


class Ingress:
    """The ASGI app: deliveries to the receiver, the rest to FastAPI."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if (
            scope["type"] != "http"
            or scope["method"] != "POST"
            or not path.startswith(PREFIX)
            or "/" in path[len(PREFIX) :]
            or len(path) == len(PREFIX)
        ):
            await self.app(scope, receive, send)
            return
        source = path[len(PREFIX) :]
        receiver: Receiver | None = getattr(self.app.state, "receiver", None)
        tracing = receiver.tracing if receiver is not None else NO_TRACING
        with tracing.delivery(source, scope["headers"]) as span:
            try:
                if receiver is None:  # served before its lifespan started
                    raise QueueUnavailable("not ready; retry later")
                outcome = await receiver.receive(source, Request(scope, receive), span)
            except ClientDisconnect:
                # Nobody is left to answer, and the sender retries what it did not finish.
                logger.info(
                    "client disconnected before its body ended", extra={"source": source[:100]}
                )
                span.ended("disconnected", 0)
                return
            except WebhookError as exc:
                span.ended("rejected", exc.status_code, exc.reason)
                await respond(send, exc.status_code, JSON, rejected(receiver, source, exc))
                return
            except Exception:
                # The server answers it 500 and logs the traceback; counted, so the 5xx
                # alert sees a bug as it sees a refusal.
                REJECTED.labels(label_of(receiver, source), InternalError.reason).inc()
                raise
            answer = reply_bytes(outcome)
            span.ended(outcome.body.get("status") or "handshake", answer[0])
            await respond(send, *answer)
