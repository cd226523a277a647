"""The delivery path of one request: source -> body -> verifier -> claim + enqueue.

Kept apart from the HTTP layer so the route stays a few lines and the order of the checks
(which decides the status code) reads top to bottom.
"""

from __future__ import annotations

import asyncio
import hmac
import time
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError
from starlette.requests import Request

from app.body import read_body
from app.errors import InvalidSignature, QueueUnavailable, ReplicasBehind, UnknownSource
from app.intake import AsyncIntake
from app.keyfetch import KeyFetcher, KeyUnavailable
from app.logs import elapsed_ms, log_state
from app.metrics import ShardFigures, SourceSeries, render
from app.providers import Delivery, Inbound, Reply, Verifier, verifier_for
from app.providers.base import event_id_from, event_type_from
from app.providers.json_body import parse_json_object
from app.replication import NotReplicated
from app.settings import Settings, SourceConfig
from app.shards import Shards
from app.snapshot import PipelineSnapshot, read_snapshot
from app.tracing import NO_SPAN, DeliverySpan, receiver_tracing

# The least time a request may wait for Redis, however long its upload took.
MIN_WAIT = 0.25


@dataclass(frozen=True, slots=True)
class Answer:
    """The 200 answer: accepted or duplicate (`body`), or what the provider expects instead
    (`reply`: a handshake's answer, or a provider's own acknowledgement)."""

    body: dict[str, str]
    reply: Reply | None = None


class Receiver:
    def __init__(
        self,
        settings: Settings,
        redis: aioredis.Redis,
        shard_clients: list[aioredis.Redis] | None = None,
    ) -> None:
        """`shard_clients`: on a cluster, one client per shard; `redis` is then the first
        shard's, where this process keeps what is not an event's (the timeline)."""
        self.settings = settings
        self.redis = redis
        self.fetcher = KeyFetcher.from_settings(settings)
        self.verifiers: dict[str, Verifier] = {
            name: verifier_for(source, self.fetcher) for name, source in settings.sources.items()
        }
        self.public_url = settings.webhook_public_url
        shards = Shards(settings.webhook_shards) if shard_clients else None
        self.intake = AsyncIntake(settings, redis, shards, shard_clients)
        self.home = self.intake.keys_at(0)
        self.tracing = receiver_tracing(settings.otel)
        # Each source's series, looked up once: `labels()` takes a lock and hashes its keys.
        self.series = {name: SourceSeries.of(name) for name in settings.sources}

    async def receive(
        self, source_name: str, request: Request, span: DeliverySpan = NO_SPAN
    ) -> Answer:
        started = time.perf_counter()
        await self.intake.make_way()
        verifier = self.verifiers.get(source_name)
        if verifier is None:
            raise UnknownSource(f"unknown source {source_name!r}")
        raw = await read_body(request, self.settings.webhook_max_body_bytes)
        received_at = time.time()
        inbound = self._inbound(verifier, request, raw, received_at)
        with span.step("verify"):
            if verifier.fetches_keys:
                delivery = await self._check_fetching(verifier, inbound, started)
            else:
                delivery = verifier.check(inbound)
        span.event(verifier.source.provider, delivery)
        if delivery.reply is not None:
            log_state("handshake", source_name, "", delivery.event_type, ms=elapsed_ms(started))
            return Answer(body={}, reply=delivery.reply)
        # The signature does not cover the id: what it covers is claimed too.
        digest = None if verifier.id_signed else delivery.signed_digest(raw)
        if delivery.batch:
            return await self._accept_batch(
                verifier.source, delivery, raw, received_at, started, span
            )
        return await self._accept(
            verifier.source, delivery, raw, received_at, started, span, digest
        )

    async def _accept_batch(
        self,
        source: SourceConfig,
        delivery: Delivery,
        raw: bytes,
        received_at: float,
        started: float,
        span: DeliverySpan,
    ) -> Answer:
        """Each event of the batch claimed at once (one pipeline: `batching.py`). Should one
        claim fail, the answer is a 503 and the provider's retry finds the others claimed."""
        outcomes = await asyncio.gather(
            *(
                self._accept(source, item, item.raw or raw, received_at, started, span)
                for item in delivery.batch
            )
        )
        accepted = any(o.body["status"] == "accepted" for o in outcomes)
        return Answer(
            body={"status": "accepted" if accepted else "duplicate", "id": delivery.event_id},
            reply=delivery.ack,
        )

    async def _check_fetching(
        self, verifier: Verifier, inbound: Inbound, started: float
    ) -> Delivery:
        """A key fetch counts against the acknowledgement deadline, leaving the claim its
        floor. The fetch itself goes on (shielded, `keyfetch.py`): the provider's retry
        finds the key cached."""
        left = self.settings.webhook_ack_timeout - (time.perf_counter() - started) - MIN_WAIT
        try:
            async with asyncio.timeout(max(left, MIN_WAIT)):
                return await verifier.check_async(inbound)
        except TimeoutError:
            raise KeyUnavailable(
                "signing key not fetched within WEBHOOK_ACK_TIMEOUT; retry later"
            ) from None

    def handshake(self, source_name: str, request: Request) -> Reply:
        """A GET on a source's URL: the providers that verify endpoints that way (Meta,
        Dropbox, Braintree) get their answer; the others a 405. Nothing is enqueued."""
        started = time.perf_counter()
        verifier = self.verifiers.get(source_name)
        if verifier is None:
            raise UnknownSource(f"unknown source {source_name!r}")
        reply = verifier.handshake(self._inbound(verifier, request, b"", time.time()))
        log_state("handshake", source_name, "", "GET", ms=elapsed_ms(started))
        return reply

    def _inbound(self, verifier: Verifier, request: Request, raw: bytes, now: float) -> Inbound:
        scope = request.scope
        query = scope.get("query_string", b"").decode("latin-1")
        url = self._public_url(request, query) if verifier.signs_url else ""
        return Inbound(scope["method"], url, query, request.headers, raw, now)

    def _public_url(self, request: Request, query: str) -> str:
        """The URL the provider called: WEBHOOK_PUBLIC_URL (behind a proxy) or this
        request's scheme and Host, then the path exactly as sent, then the query."""
        scope = request.scope
        path: str = (scope.get("raw_path") or scope["path"].encode()).decode("latin-1")
        base: str | None = self.public_url
        if base is None:
            host = request.headers.get("host") or "{}:{}".format(*(scope.get("server") or ("", "")))
            base = f"{scope['scheme']}://{host}"
        return base + path + (f"?{query}" if query else "")

    async def replay(
        self, source_name: str, request: Request, span: DeliverySpan = NO_SPAN
    ) -> Answer:
        """An event re-sent by an operator, whose signature no longer matches.

        Disabled (404, as if absent) unless WEBHOOK_REPLAY_TOKEN is set; the token is
        compared in constant time. Replays go through the same claim, so they are deduped.
        """
        started = time.perf_counter()
        token = self.settings.webhook_replay_token
        verifier = self.verifiers.get(source_name)
        if token is None or verifier is None:
            raise UnknownSource("not found")
        given = request.headers.get("x-replay-token", "").encode()
        if not hmac.compare_digest(given, token.get_secret_value().encode()):
            raise InvalidSignature("invalid replay token")
        raw = await read_body(request, self.settings.webhook_max_body_bytes)
        payload = parse_json_object(raw)
        headers = request.headers
        delivery = Delivery(
            event_id=event_id_from(
                headers.get("x-replay-event-id") or payload.get("id") or payload.get("event_id"),
                "X-Replay-Event-Id or body 'id'",
            ),
            event_type=event_type_from(
                headers.get("x-replay-event-type")
                or payload.get("type")
                or payload.get("event_type")
            ),
            headers={"x-webhook-replayed-from": "replay-endpoint"},
        )
        span.event(verifier.source.provider, delivery)
        return await self._accept(verifier.source, delivery, raw, time.time(), started, span)

    async def _accept(
        self,
        source: SourceConfig,
        delivery: Delivery,
        raw: bytes,
        received_at: float,
        started: float,
        span: DeliverySpan,
        signed_digest: str | None = None,
    ) -> Answer:
        source_name = source.name
        # The wait for Redis ends at the acknowledgement deadline, counted from the
        # request's arrival; never cut below a floor, so a slow upload still gets its try.
        wait = max(self.settings.webhook_ack_timeout - (time.perf_counter() - started), MIN_WAIT)
        try:
            with span.step("claim"):
                claim = await self.intake.claim_and_enqueue(
                    source, delivery, raw, received_at, wait, signed_digest, span.traceparent
                )
        except NotReplicated as exc:
            raise ReplicasBehind(
                "queue unavailable (NotReplicated); nothing was accepted, retry later"
            ) from exc
        except RedisError as exc:
            raise QueueUnavailable(
                f"queue unavailable ({type(exc).__name__}); nothing was accepted, retry later"
            ) from exc
        except TimeoutError:
            # The claim may still land; the provider's retry is then a duplicate with one job.
            raise QueueUnavailable(
                "queue did not confirm within WEBHOOK_ACK_TIMEOUT; retry later"
            ) from None
        status = "accepted" if claim.accepted else "duplicate"
        elapsed = time.perf_counter() - started
        series = self.series[source_name]
        (series.accepted if claim.accepted else series.duplicate).inc()
        series.ack_seconds.observe(elapsed)
        if claim.accepted:
            series.last_accepted.set(received_at)
        extra: dict[str, Any] = {}
        if claim.duplicate_job_id:
            extra["enqueued_as"] = claim.duplicate_job_id
        if "x-webhook-replayed-from" in delivery.headers:
            extra["replayed"] = True
        log_state(
            status,
            source_name,
            delivery.event_id,
            delivery.event_type,
            job_id=claim.job_id,
            ms=round(elapsed * 1000, 2),
            **extra,
        )
        return Answer(body={"status": status, "id": delivery.event_id}, reply=delivery.ack)

    async def metrics(self) -> bytes:
        """Served even when Redis cannot be read: the receiver's 503s are what an outage
        shows, and a scrape that failed with it would hide them. On a cluster, each shard
        read on its own: one that does not answer leaves the others' figures."""
        clients, sharded = self.intake.clients, self.intake.shards is not None
        read = await asyncio.gather(*(self._snapshot(c, i) for i, c in enumerate(clients)))
        shards = [ShardFigures(i if sharded else None, s) for i, s in enumerate(read)]
        silences = {name: s.expected_silence for name, s in self.settings.sources.items()}
        return render(shards, silences)

    async def _snapshot(self, client: Any, shard: int) -> PipelineSnapshot | None:
        try:
            async with asyncio.timeout(self.settings.webhook_ack_timeout):
                keys = self.intake.keys_at(shard)
                return await read_snapshot(client, keys, self.settings.sources)
        except (RedisError, TimeoutError):
            return None

    async def ready(self) -> bool:
        try:
            async with asyncio.timeout(self.settings.webhook_ack_timeout):
                pings = [client.ping() for client in self.intake.clients]
                return all(await asyncio.gather(*pings))
        except (RedisError, TimeoutError):
            return False
