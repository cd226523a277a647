"""Claim an event id and enqueue its RQ job in one atomic step, recording it in the ledger.

A receiver that does `SET NX` and then `LPUSH`, as tutorials show, can crash between the
two: the event is claimed but never queued, and the provider's retry is answered
"duplicate".
Here one Lua script (`app/claim.py`) does it all: either it never reached Redis (nothing
is written; the answer is 503 and the provider retries) or all of it ran.

With WEBHOOK_REPLICA_ACKS, every path that answers for a write waits for the replicas on
the connection that wrote it (`app/replication.py`): the receiver's claims (in the batch's
pipeline), the log-only path's extra job, and the `webhooks replay` command's claims.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis
from redis import Redis

from app.batching import ScriptBatcher
from app.claim import ENQUEUE, ClaimArgs, ClaimKeys, EnqueueArgs, EnqueueKeys, call, claim_script
from app.event_job import NewJob, new_job
from app.jobhash import JobHash
from app.keys import Keys, job_id_for
from app.providers import Delivery
from app.replication import ReplicaAcks, check_support_sync
from app.settings import Settings, SourceConfig
from app.shards import Shards


@dataclass(frozen=True, slots=True)
class Claim:
    accepted: bool
    job_id: str
    # Log-only mode: the job id a would-be duplicate was enqueued under.
    duplicate_job_id: str | None = None


class Intake:
    """Turns a verified delivery into the scripts' calls that queue it, at most once per id."""

    def __init__(self, settings: Settings, connection: Any, shards: Shards | None = None) -> None:
        self.settings = settings
        self.keys = settings.keys
        self.shards = shards
        self.shard_keys = [self.keys.sharded(t) for t in shards.tags] if shards else [self.keys]
        self.job_hash = JobHash(
            settings.webhook_queue,
            settings.webhook_job_timeout,
            settings.webhook_max_retries,
            settings.retry_intervals,
            connection,
        )
        self.claim_lua = claim_script(self.job_hash.lua_constant_pairs())
        self.acks = ReplicaAcks.of(settings)

    def new_job(
        self,
        source: SourceConfig,
        delivery: Delivery,
        raw: bytes,
        received_at: float,
        job_id: str | None = None,
        duplicate: bool = False,
        trace: str = "",
        keys: Keys | None = None,
    ) -> NewJob:
        prefix = None if keys is None else keys.prefix
        return new_job(
            self.settings, source, delivery, raw, received_at, job_id, duplicate, trace, prefix
        )

    def shard_of(self, source: str, event_id: str | None) -> int:
        """One event's shard (`app/shards.py`; 0 on one Redis); `event_id` None for a
        source whose id is unsigned, whose events all go to the source's shard."""
        return 0 if self.shards is None else self.shards.of(source, event_id)

    def keys_at(self, shard: int) -> Keys:
        return self.shard_keys[shard]

    def claim_call(
        self,
        source: SourceConfig,
        delivery: Delivery,
        raw: bytes,
        received_at: float,
        signed_digest: str | None = None,
        trace: str = "",
        shard: int | None = None,
    ) -> tuple[str, list[str], list[Any]]:
        """The job id, keys and arguments of the claim script for one delivery;
        `signed_digest` (the signed bytes' digest) dedupes a source whose id is unsigned;
        `trace`, the receiver's span the job's attempts belong to (tracing on); `shard`,
        the event's (`shard_of`), when the caller has it already."""
        if shard is None:
            shard = self.shard_of(source.name, None if signed_digest else delivery.event_id)
        at = self.shard_keys[shard]
        job = self.new_job(source, delivery, raw, received_at, trace=trace, keys=at)
        seen_key = at.seen(source.name, delivery.event_id)
        stamp, data, description, meta = self.job_hash.per_event(
            job.call.args(), job.meta.to_meta(), job.description
        )
        keys = ClaimKeys(
            seen_key=seen_key,
            job_key=at.job(job.job_id),
            queue_key=at.queue,
            queues_key=at.queues,
            event_key=at.event(source.name, delivery.event_id),
            events_key=at.events,
            signed_key=at.seen_signed(source.name, signed_digest) if signed_digest else seen_key,
        )
        args = ClaimArgs(
            dedupe_ttl=source.dedupe_ttl,
            job_id=job.job_id,
            ledger_ttl=self.settings.webhook_ledger_ttl,
            received_at=received_at,
            job_stamp=stamp,
            job_data=data,
            description=description,
            meta=meta,
            event_id=delivery.event_id,
            event_type=delivery.event_type,
            payload_format=delivery.payload_format,
            source=source.name,
            trace=trace,
        )
        return (job.job_id, *call(keys, args))

    def enqueue_call(self, job: NewJob, at: Keys | None = None) -> tuple[list[str], list[Any]]:
        """Keys and arguments of the ENQUEUE script: the job under an id of its own,
        unconditionally (a replay, which may be refused, builds its own: `ops/replay.py`);
        `at`, the event's keys (on a cluster, its shard's)."""
        at = at or self.keys
        fields = self.job_hash.fields(job.call.args(), job.meta.to_meta(), job.description)
        keys = EnqueueKeys.without_replay(
            job_key=at.job(job.job_id),
            queue_key=at.queue,
            queues_key=at.queues,
            event_key=at.event(job.call.source, job.call.event_id),
        )
        keys_list, args = call(keys, EnqueueArgs(job.job_id, replay=0))
        return keys_list, [*args, *fields]

    def duplicate_call(
        self,
        source: SourceConfig,
        delivery: Delivery,
        raw: bytes,
        received_at: float,
        shard: int = 0,
    ) -> tuple[str, list[str], list[Any]]:
        """The log-only path's extra job, in the shard its claim went to."""
        at = self.shard_keys[shard]
        job_id = f"{job_id_for(source.name, delivery.event_id)}-dup-{uuid.uuid4().hex[:12]}"
        job = self.new_job(
            source, delivery, raw, received_at, job_id=job_id, duplicate=True, keys=at
        )
        return (job_id, *self.enqueue_call(job, at))


class AsyncIntake(Intake):
    """The receiver's side: one round trip per delivery on the asyncio client. On a
    cluster, `clients` holds one client per shard (`app/cluster.py`): an event's claim, its
    batch's pipeline and the replicas' wait go to its shard's primary."""

    def __init__(
        self,
        settings: Settings,
        redis: aioredis.Redis,
        shards: Shards | None = None,
        clients: list[aioredis.Redis] | None = None,
    ) -> None:
        super().__init__(settings, redis, shards)
        self.clients = clients or [redis]
        assert len(self.clients) == len(self.shard_keys), "a client per shard"
        acks = self.acks
        self.shard_acks = [
            acks if acks is None or clients is None else acks.under(self.keys_at(i).prefix)
            for i in range(len(self.clients))
        ]
        self.claims = [
            ScriptBatcher(c, self.claim_lua, a)
            for c, a in zip(self.clients, self.shard_acks, strict=True)
        ]
        self.enqueue_scripts = [c.register_script(ENQUEUE) for c in self.clients]

    async def make_way(self) -> None:
        """Before a request's work: while a batch of claims is full, let it go to Redis
        first. A burst's requests are all ready in the same tick, and the batch's flush runs
        after them; each request that yields here goes behind it, so Redis runs that batch
        while this process verifies the next."""
        while any(claims.full() for claims in self.claims):
            await asyncio.sleep(0)

    async def claim_and_enqueue(
        self,
        source: SourceConfig,
        delivery: Delivery,
        raw: bytes,
        received_at: float,
        timeout: float | None = None,
        signed_digest: str | None = None,
        trace: str = "",
    ) -> Claim:
        """Raises `redis.RedisError` when Redis cannot take the event (then nothing is
        kept), `TimeoutError` when it has not answered within `timeout` seconds."""
        started = time.monotonic()
        shard = self.shard_of(source.name, None if signed_digest else delivery.event_id)
        job_id, keys, args = self.claim_call(
            source, delivery, raw, received_at, signed_digest, trace, shard
        )
        if await self.claims[shard](keys, args, timeout):
            return Claim(accepted=True, job_id=job_id)
        if self.settings.webhook_dedupe_mode != "log-only":
            return Claim(accepted=False, job_id=job_id)
        dup_id, keys, args = self.duplicate_call(source, delivery, raw, received_at, shard)
        left = None if timeout is None else max(timeout - (time.monotonic() - started), 0.01)
        async with asyncio.timeout(left):
            await self.enqueue(keys, args, shard)
        return Claim(accepted=False, job_id=job_id, duplicate_job_id=dup_id)

    async def enqueue(self, keys: list[str], args: list[Any], shard: int = 0) -> None:
        script, acks = self.enqueue_scripts[shard], self.shard_acks[shard]
        if acks is None:
            await script(keys=keys, args=args)
            return
        async with self.clients[shard].pipeline(transaction=False) as pipe:
            await script(keys=keys, args=args, client=pipe)
            acks.add_to(pipe)
            replies = await pipe.execute(raise_on_error=False)
        acks.check(list(replies))


class SyncIntake(Intake):
    """The same scripts for the `webhooks replay` command, on a blocking client."""

    def __init__(self, settings: Settings, redis: Redis) -> None:
        super().__init__(settings, redis)
        self.redis = redis
        self.claim_script = redis.register_script(self.claim_lua)
        self.enqueue_script = redis.register_script(ENQUEUE)
        # A server without the chosen wait is refused before anything is claimed.
        check_support_sync(redis, self.acks)

    def claim_and_enqueue(
        self, source: SourceConfig, delivery: Delivery, raw: bytes, received_at: float
    ) -> Claim:
        """Raises `NotReplicated` (a RedisError) when WEBHOOK_REPLICA_ACKS replicas did not
        acknowledge: the event may be claimed, and a run again answers it as already had."""
        job_id, keys, args = self.claim_call(source, delivery, raw, received_at)
        return Claim(accepted=bool(self.replicated(self.claim_script, keys, args)), job_id=job_id)

    def replicated(self, script: Any, keys: list[str], args: list[Any]) -> Any:
        """The script's reply, once the replicas acknowledged it (when they must)."""
        if self.acks is None:
            return script(keys=keys, args=args)
        with self.redis.pipeline(transaction=False) as pipe:
            script(keys=keys, args=args, client=pipe)
            self.acks.add_to(pipe)
            replies = pipe.execute(raise_on_error=False)
        self.acks.check(list(replies))
        return replies[0]
