"""Claim an event id and enqueue its RQ job in one atomic step, recording it in the ledger.

The seed article's receiver did `SET NX` and then `LPUSH`: a crash between the two left an
event claimed but never queued, and the provider's retry was then answered "duplicate".
Here a single Lua script checks, writes the job hash exactly as RQ's `job.to_dict()`
serialises it, registers the queue, pushes the job id, writes the ledger record, and only
then sets the dedupe key, in one round trip that Redis runs without interleaving. Either
the script never reached Redis (nothing is written; the answer is 503 and the provider
retries) or all of it ran.

An event counts as a duplicate while its dedupe key lives *or* its job still exists (queued,
retrying, dead-lettered or finished within its result TTL): re-enqueuing an existing job id
would merge into the old hash and run it twice.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis
from redis import Redis

from app.batching import ScriptBatcher
from app.jobhash import JOB_FUNCTION, JobHash
from app.keys import RQ_QUEUES_SET, Keys, job_id_for
from app.providers import Delivery
from app.settings import Settings, SourceConfig

__all__ = ["ENQUEUE_ONLY", "JOB_FUNCTION", "AsyncIntake", "SyncIntake", "claim_script"]

CLAIM_AND_ENQUEUE = """
-- KEYS: 1 dedupe key, 2 job hash, 3 queue list, 4 RQ's set of queues,
--       5 ledger record, 6 ledger index
-- ARGV: 1 dedupe ttl, 2 job id, 3 ledger ttl, 4 received at (unix s), 5 job timestamp,
--       6 job data, 7 description, 8 meta, 9 event id, 10 event type, 11 payload, 12 source
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[2]) == 1 then
  return 0
end
-- Fail before the first write, so an error can never leave half an event behind.
local kind = redis.call('TYPE', KEYS[3])['ok']
if kind ~= 'none' and kind ~= 'list' then
  return redis.error_reply('queue key ' .. KEYS[3] .. ' holds a ' .. kind)
end
redis.call('HSET', KEYS[2], 'created_at', ARGV[5], 'enqueued_at', ARGV[5], 'data', ARGV[6],
           'description', ARGV[7], 'meta', ARGV[8], CONSTANT_JOB_FIELDS)
redis.call('SADD', KEYS[4], KEYS[3])
redis.call('RPUSH', KEYS[3], ARGV[2])
redis.call('HSET', KEYS[5], 'source', ARGV[12], 'id', ARGV[9], 'type', ARGV[10],
           'status', 'queued', 'attempts', '0', 'received_at', ARGV[4], 'job_id', ARGV[2],
           'payload', ARGV[11])
redis.call('EXPIRE', KEYS[5], ARGV[3])
redis.call('ZADD', KEYS[6], ARGV[4], KEYS[5])
redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', tonumber(ARGV[4]) - tonumber(ARGV[3]))
redis.call('SET', KEYS[1], '1', 'EX', ARGV[1])
return 1
"""


def claim_script(job_hash: JobHash) -> str:
    """The claim script with this configuration's constant job fields written in."""
    return CLAIM_AND_ENQUEUE.replace("CONSTANT_JOB_FIELDS", job_hash.lua_constant_pairs())


# Log-only dedupe mode: a would-be duplicate is still enqueued, under a job id of its own.
ENQUEUE_ONLY = """
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('SADD', KEYS[3], KEYS[2])
redis.call('RPUSH', KEYS[2], ARGV[1])
return 1
"""

_UNSAFE = re.compile(r"[^A-Za-z0-9._:@/-]")


def safe_label(value: str, limit: int = 80) -> str:
    """Text fit for rq-dashboard, which renders job descriptions without escaping."""
    cleaned = _UNSAFE.sub("?", value)
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 1] + "~"


@dataclass(frozen=True, slots=True)
class Claim:
    accepted: bool
    job_id: str
    # Log-only mode: the job id a would-be duplicate was enqueued under.
    duplicate_job_id: str | None = None


class Intake:
    """Turns a verified delivery into a queued RQ job, at most once per event id."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.keys = Keys(settings.webhook_key_prefix, settings.webhook_queue)
        self.job_hash = JobHash(
            settings.webhook_queue,
            settings.webhook_job_timeout,
            settings.webhook_max_retries,
            settings.retry_intervals,
        )
        self.claim_lua = claim_script(self.job_hash)

    def _job(
        self,
        source: SourceConfig,
        delivery: Delivery,
        raw: bytes,
        received_at: float,
        duplicate: bool = False,
    ) -> tuple[tuple[Any, ...], dict[str, Any], str]:
        settings = self.settings
        description = (
            f"{source.name} {safe_label(delivery.event_type or '(untyped)')} "
            f"{safe_label(delivery.event_id)}" + (" (duplicate, log-only)" if duplicate else "")
        )
        meta = {
            "source": source.name,
            "event_id": delivery.event_id,
            "type": delivery.event_type,
            "received_at": received_at,
            "attempts": 0,
            "budget": settings.webhook_max_retries,
            "budget_start": 0,
            # Where the worker records outcomes (ledger, counters, entity versions).
            "prefix": settings.webhook_key_prefix,
            "ledger_ttl": settings.webhook_ledger_ttl,
            **({"duplicate": True} if duplicate else {}),
            **({"format": delivery.payload_format} if delivery.payload_format != "json" else {}),
        }
        args = (
            source.name,
            delivery.event_id,
            delivery.event_type,
            raw,
            delivery.headers,
            received_at,
        )
        return args, meta, description

    def job_fields(
        self,
        source: SourceConfig,
        delivery: Delivery,
        raw: bytes,
        received_at: float,
        duplicate: bool = False,
    ) -> list[Any]:
        """The whole RQ job hash of one event, as field/value pairs."""
        return self.job_hash.fields(*self._job(source, delivery, raw, received_at, duplicate))

    def claim_call(
        self, source: SourceConfig, delivery: Delivery, raw: bytes, received_at: float
    ) -> tuple[str, list[str], list[Any]]:
        """The job id, keys and arguments of the claim script for one delivery."""
        job_id = job_id_for(source.name, delivery.event_id)
        stamp, data, description, meta = self.job_hash.per_event(
            *self._job(source, delivery, raw, received_at)
        )
        keys = [
            self.keys.seen(source.name, delivery.event_id),
            self.keys.job(job_id),
            self.keys.queue,
            RQ_QUEUES_SET,
            self.keys.event(source.name, delivery.event_id),
            self.keys.events,
        ]
        args = [
            source.dedupe_ttl,
            job_id,
            self.settings.webhook_ledger_ttl,
            received_at,
            stamp,
            data,
            description,
            meta,
            delivery.event_id,
            delivery.event_type,
            raw,
            source.name,
        ]
        return job_id, keys, args

    def duplicate_call(
        self, source: SourceConfig, delivery: Delivery, raw: bytes, received_at: float
    ) -> tuple[str, list[str], list[Any]]:
        job_id = f"{job_id_for(source.name, delivery.event_id)}-dup-{uuid.uuid4().hex[:12]}"
        fields = self.job_fields(source, delivery, raw, received_at, duplicate=True)
        return job_id, [self.keys.job(job_id), self.keys.queue, RQ_QUEUES_SET], [job_id, *fields]


class AsyncIntake(Intake):
    """The receiver's side: one round trip per delivery on the asyncio client."""

    def __init__(self, settings: Settings, redis: aioredis.Redis) -> None:
        super().__init__(settings)
        self.claim = ScriptBatcher(redis, self.claim_lua)
        self.enqueue_script = redis.register_script(ENQUEUE_ONLY)

    async def claim_and_enqueue(
        self, source: SourceConfig, delivery: Delivery, raw: bytes, received_at: float
    ) -> Claim:
        """Raises `redis.RedisError` when Redis cannot take the event; then nothing is kept."""
        job_id, keys, args = self.claim_call(source, delivery, raw, received_at)
        if await self.claim(keys, args):
            return Claim(accepted=True, job_id=job_id)
        if self.settings.webhook_dedupe_mode != "log-only":
            return Claim(accepted=False, job_id=job_id)
        dup_id, keys, args = self.duplicate_call(source, delivery, raw, received_at)
        await self.enqueue_script(keys=keys, args=args)
        return Claim(accepted=False, job_id=job_id, duplicate_job_id=dup_id)


class SyncIntake(Intake):
    """The same claim for the `webhooks replay` command, on a blocking client."""

    def __init__(self, settings: Settings, redis: Redis) -> None:
        super().__init__(settings)
        self.claim_script = redis.register_script(self.claim_lua)

    def claim_and_enqueue(
        self, source: SourceConfig, delivery: Delivery, raw: bytes, received_at: float
    ) -> Claim:
        job_id, keys, args = self.claim_call(source, delivery, raw, received_at)
        return Claim(accepted=bool(self.claim_script(keys=keys, args=args)), job_id=job_id)
