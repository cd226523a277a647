"""The ASGI application (`app.main:app`).

Settings are read when the app starts, not when this module is imported, so tests build
their own app with `create_app(settings)`. A configuration error stops startup with one
line naming the variable (uvicorn prints it), not a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import redis.asyncio as aioredis
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

from app.connection import RECEIVER, async_client, async_shard_clients
from app.durability import check_persistence, check_replication
from app.errors import WebhookError
from app.ingress import JSON, Ingress, rejected, respond
from app.logs import configure_logging, logger
from app.process_settings import shared_settings
from app.receiver import Receiver
from app.routes import router
from app.settings import ConfigError, Settings
from app.shard_timelines import ShardOutcomes
from app.startup_checks import Process, check_startup
from app.timeline import start_timeline
from app.tracing import NO_TRACING, Tracing

# uvicorn reads a request's head and body with no bound of ours unless its `--http` is the
# guard (`app/http_guard.py`, the Procfile's web line). Said once at startup, not refused:
# a receiver behind a proxy that bounds heads and deadlines itself may run without it.
GUARD = "app.http_guard:GuardedHttpToolsProtocol"
UNGUARDED = (
    f"the HTTP bounds are off: uvicorn was started without `--http {GUARD}` (the "
    "Procfile's web line), so request heads of any size are read whole and a slow sender "
    "holds its connection forever; see docs/deployment.md"
)


def guarded() -> bool:
    """Whether this process's server reads requests through the guard. Nothing of ours
    imports `app.http_guard` (tests/test_unguarded_start.py): loaded, it was by uvicorn's
    `--http`, which imports its protocol class before it starts the app."""
    return "app.http_guard" in sys.modules


def redis_client(settings: Settings) -> aioredis.Redis:
    # Short timeouts and few retries (`RECEIVER`): when Redis is gone the provider should get
    # its 503 (and retry later) in well under its own timeout, not hang. One Redis or
    # Sentinel's primary, as every other process reads the settings (`app/connection.py`).
    return async_client(settings, RECEIVER)


def instrument_routes(app: FastAPI, tracing: Tracing) -> None:
    """The probes', metrics' and other routes' spans, by OpenTelemetry's FastAPI
    instrumentation. Not the sources' URLs: a delivery's span is our own
    (`app/delivery_trace.py`), and a provider's `traceparent` must not parent a handshake's."""
    from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor

    FastAPIInstrumentor.instrument_app(
        app, tracer_provider=getattr(tracing, "provider", None), excluded_urls="/webhooks/"
    )
    # Starlette built its middleware for this lifespan call; the next request builds it
    # again, with the instrumentation's.
    app.middleware_stack = None


def create_app(
    settings: Settings | None = None, *, redis: aioredis.Redis | None = None, served: bool = False
) -> Ingress:
    """The app; with `redis`, on that client instead of one made from the settings (the
    pytest plugin's `receiver` gives a fakeredis one), which the caller then closes.
    `served`: by a server on a socket (`app.main:app`), which says when it is unguarded."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        configure_logging()
        active = settings if settings is not None else Settings.load()
        check_startup(active, Process.RECEIVER)
        shard_clients = None
        if redis is None and active.cluster_target is not None:
            shard_clients = async_shard_clients(active, RECEIVER)
        client = redis if redis is not None else (shard_clients or [redis_client(active)])[0]
        owned = [] if redis is not None else (shard_clients or [client])
        app.state.receiver = receiver = Receiver(active, client, shard_clients)
        if receiver.tracing is not NO_TRACING:
            instrument_routes(app, receiver.tracing)
        try:
            for checked in shard_clients or [client]:
                await check_persistence(checked, active)
                await check_replication(checked, active)
        except ConfigError:
            for made in owned:
                await made.aclose()
            raise
        logger.info(
            "receiver started",
            extra={"sources": {n: s.provider for n, s in active.sources.items()}},
        )
        if served and not guarded():
            logger.warning(UNGUARDED)
        # The Events page's picture of the last day, off the request path (app/timeline.py).
        others = [
            ShardOutcomes(shard_client, receiver.intake.keys_at(n).prefix)
            for n, shard_client in enumerate(shard_clients or [])
            if n
        ]
        timeline = await start_timeline(client, receiver.home.prefix, active.sources, others)
        try:
            yield
        finally:
            timeline.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await timeline
            for made in owned:
                await made.aclose()
            receiver.tracing.shutdown()

    # No interactive docs: the public surface is the webhook routes and the probes.
    app = FastAPI(
        title="webhook receiver", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None
    )
    app.include_router(router)

    @app.exception_handler(WebhookError)
    async def webhook_error(request: Request, exc: WebhookError) -> Response:
        receiver = getattr(request.app.state, "receiver", None)
        body = rejected(receiver, request.path_params.get("source", ""), exc)
        return Response(body, exc.status_code, media_type="application/json")

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        return JSONResponse(
            {"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers
        )

    return Ingress(app)


Scope = dict[str, Any]
Receive = Any
Send = Any
NOT_READY = b'{"detail":"receiver not ready; retry later"}'


class Application:
    """`app.main:app`: reads the settings when uvicorn starts it (its lifespan), then serves
    the app built from them. A `ConfigError` fails the startup with its one-line message.

    Under `uvicorn --lifespan off` no startup ever comes: the first request starts the app
    (settings, Redis, the startup checks), and those that arrive meanwhile wait for that one
    start. A start that fails is logged once; every request is then answered 503, as one
    before its lifespan (`app/ingress.py`), never 500."""

    def __init__(self) -> None:
        self.app: Ingress | None = None
        self._alone: asyncio.Task[Ingress | None] | None = None
        self._lifespan: asyncio.Task[None] | None = None  # a reference, or it may be collected

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.app is None:
            if scope["type"] == "lifespan":
                first = await receive()
                try:
                    settings = shared_settings(scope.setdefault("state", {}))
                    self.app = create_app(settings, served=True)
                except ConfigError as exc:
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                receive = _replay(first, receive)
                send = _one_line_failure(send)
            else:  # uvicorn --lifespan off
                if self._alone is None:
                    self._alone = asyncio.ensure_future(self._start_alone(scope.get("state", {})))
                app = await asyncio.shield(self._alone)
                if app is None:
                    await respond(send, 503, JSON, NOT_READY)
                    return
                self.app = app
        await self.app(scope, receive, send)

    async def _start_alone(self, state: dict[str, Any]) -> Ingress | None:
        """Build the app and run its lifespan's startup, as uvicorn does when the lifespan is
        on. Its shutdown never comes: without a lifespan the process ends without one."""
        configure_logging()
        try:
            app = create_app(shared_settings(state), served=True)
        except ConfigError as exc:
            logger.error(str(exc))
            return None
        inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        inbox.put_nowait({"type": "lifespan.startup"})
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()

        async def sent(message: dict[str, Any]) -> None:
            if not answer.done():
                answer.set_result(message)

        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": {}}
        self._lifespan = asyncio.create_task(app(scope, inbox.get, _one_line_failure(sent)))
        # A failed startup raises after saying so: its exception is the message, said below.
        self._lifespan.add_done_callback(lambda task: task.cancelled() or task.exception())
        either: list[asyncio.Future[Any]] = [answer, self._lifespan]
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        message = answer.result() if answer.done() else {}
        if message.get("type") != "lifespan.startup.complete":
            logger.error(str(message.get("message") or "the receiver's startup failed"))
            return None
        return app


def _one_line_failure(send: Send) -> Send:
    """A startup check that refuses (durable Redis required, no WAITAOF) fails the lifespan
    with a `ConfigError`, which Starlette reports as a whole traceback: keep its line."""

    async def sent(message: dict[str, Any]) -> None:
        text = str(message.get("message", ""))
        if message.get("type") == "lifespan.startup.failed" and "ConfigError: " in text:
            line = text.rsplit("ConfigError: ", 1)[1].strip().splitlines()[0]
            message = {**message, "message": line}
        await send(message)

    return sent


def _replay(first: dict[str, Any], receive: Receive) -> Receive:
    sent = False

    async def replayed() -> Any:
        nonlocal sent
        if not sent:
            sent = True
            return first
        return await receive()

    return replayed


app = Application()
