"""HTTP routes besides deliveries (`POST /webhooks/{source}` is `app/ingress.py`'s). The
receiver is injected, so tests build the app with their own settings."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST

from app.errors import WebhookError
from app.providers import Reply
from app.receiver import Receiver

router = APIRouter()


async def get_receiver(request: Request) -> Receiver:
    receiver: Receiver = request.app.state.receiver
    return receiver


ReceiverDep = Annotated[Receiver, Depends(get_receiver)]


def send(reply: Reply) -> Response:
    return Response(
        reply.body, reply.status, headers=dict(reply.headers), media_type=reply.media_type
    )


@router.get("/webhooks/{source}", summary="A provider's GET handshake (Meta, Dropbox, Braintree)")
async def handshake_webhook(source: str, request: Request, receiver: ReceiverDep) -> Response:
    return send(receiver.handshake(source, request))


@router.post("/webhooks/{source}/replay", summary="Re-send an event (X-Replay-Token)")
async def replay_webhook(source: str, request: Request, receiver: ReceiverDep) -> JSONResponse:
    with receiver.tracing.delivery(source, request.scope["headers"]) as span:
        try:
            outcome = await receiver.replay(source, request, span)
        except WebhookError as exc:
            span.ended("rejected", exc.status_code, exc.reason)
            raise
        span.ended(outcome.body["status"], 200)
    return JSONResponse(outcome.body)


@router.get("/healthz", summary="The process is alive")
async def healthz() -> JSONResponse:
    return JSONResponse({"status": "ok"})


@router.get("/readyz", summary="Redis is reachable, so events can be accepted")
async def readyz(receiver: ReceiverDep) -> JSONResponse:
    if await receiver.ready():
        return JSONResponse({"status": "ready"})
    return JSONResponse({"detail": "redis unreachable"}, status_code=503)


@router.get("/metrics", summary="Prometheus metrics")
async def metrics(receiver: ReceiverDep) -> Response:
    return Response(await receiver.metrics(), media_type=CONTENT_TYPE_LATEST)
