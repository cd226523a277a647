"""The delivery path of one request: source -> body -> verifier -> claim + enqueue.

Kept apart from the HTTP layer so the route stays a few lines and the order of the checks
(which decides the status code) reads top to bottom.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import redis.asyncio as aioredis
from redis.exceptions import RedisError
from starlette.requests import Request

from app.body import read_body
from app.errors import QueueUnavailable, UnknownSource
from app.intake import Intake
from app.logs import elapsed_ms, log_state
from app.providers import Verifier, verifier_for
from app.settings import Settings


@dataclass(frozen=True, slots=True)
class Outcome:
    """The 200 answer: accepted or duplicate, or the reply a provider's handshake expects."""

    body: dict[str, str]


class Receiver:
    def __init__(self, settings: Settings, redis: aioredis.Redis) -> None:
        self.settings = settings
        self.redis = redis
        self.verifiers: dict[str, Verifier] = {
            name: verifier_for(source) for name, source in settings.sources.items()
        }
        self.intake = Intake(settings, redis)

    async def receive(self, source_name: str, request: Request) -> Outcome:
        started = time.perf_counter()
        verifier = self.verifiers.get(source_name)
        if verifier is None:
            raise UnknownSource(f"unknown source {source_name!r}")
        raw = await read_body(request, self.settings.webhook_max_body_bytes)
        received_at = time.time()
        delivery = verifier.verify(raw, request.headers, received_at)
        if delivery.reply is not None:
            log_state("handshake", source_name, "", delivery.event_type, ms=elapsed_ms(started))
            return Outcome(body=delivery.reply)
        try:
            claim = await self.intake.claim_and_enqueue(verifier.source, delivery, raw, received_at)
        except RedisError as exc:
            raise QueueUnavailable(
                f"queue unavailable ({type(exc).__name__}); nothing was accepted, retry later"
            ) from exc
        status = "accepted" if claim.accepted else "duplicate"
        log_state(
            status,
            source_name,
            delivery.event_id,
            delivery.event_type,
            job_id=claim.job_id,
            ms=elapsed_ms(started),
        )
        return Outcome(body={"status": status, "id": delivery.event_id})

    async def ready(self) -> bool:
        try:
            return bool(await self.redis.ping())
        except RedisError:
            return False
