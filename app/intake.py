"""Claim an event id and enqueue its RQ job in one atomic step.

The seed article's receiver did `SET NX` and then `LPUSH`: a crash between the two left an
event claimed but never queued, and the provider's retry was then answered "duplicate".
Here a single Lua script checks, writes the job hash exactly as RQ's `job.to_dict()`
serialises it, registers the queue, pushes the job id and only then sets the dedupe key,
in one round trip that Redis runs without interleaving. Either the script never reached
Redis (nothing is written; the answer is 503 and the provider retries) or all of it ran.

An event counts as a duplicate while its dedupe key lives *or* its job still exists (queued,
retrying, dead-lettered or finished within its result TTL): re-enqueuing an existing job id
would merge into the old hash and run it twice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis
from redis import Redis
from rq.job import Job, JobStatus, Retry
from rq.utils import now

from app.keys import RQ_QUEUES_SET, Keys, job_id_for
from app.providers import Delivery
from app.settings import Settings, SourceConfig

JOB_FUNCTION = "workers.job.deliver"

CLAIM_AND_ENQUEUE = """
-- KEYS: 1 dedupe key, 2 job hash, 3 queue list, 4 RQ's set of queues
-- ARGV: 1 dedupe ttl, 2 job id, 3.. job hash field/value pairs
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[2]) == 1 then
  return 0
end
-- Fail before the first write, so an error can never leave half an event behind.
local kind = redis.call('TYPE', KEYS[3])['ok']
if kind ~= 'none' and kind ~= 'list' then
  return redis.error_reply('queue key ' .. KEYS[3] .. ' holds a ' .. kind)
end
redis.call('HSET', KEYS[2], unpack(ARGV, 3))
redis.call('SADD', KEYS[4], KEYS[3])
redis.call('RPUSH', KEYS[3], ARGV[2])
redis.call('SET', KEYS[1], '1', 'EX', ARGV[1])
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


class Intake:
    """Turns a verified delivery into a queued RQ job, at most once per event id."""

    def __init__(self, settings: Settings, redis: aioredis.Redis) -> None:
        self.settings = settings
        self.keys = Keys(settings.webhook_key_prefix, settings.webhook_queue)
        self.redis = redis
        self.script = redis.register_script(CLAIM_AND_ENQUEUE)
        # RQ's Job wants a connection object; serialising a job never uses it.
        self._rq_connection = Redis()

    def job_fields(
        self,
        source: SourceConfig,
        delivery: Delivery,
        raw: bytes,
        received_at: float,
    ) -> tuple[str, list[Any]]:
        settings = self.settings
        job_id = job_id_for(source.name, delivery.event_id)
        job = Job.create(
            JOB_FUNCTION,
            args=(
                source.name,
                delivery.event_id,
                delivery.event_type,
                raw,
                delivery.headers,
                received_at,
            ),
            connection=self._rq_connection,
            id=job_id,
            origin=settings.webhook_queue,
            timeout=settings.webhook_job_timeout,
            retry=(
                Retry(max=settings.webhook_max_retries, interval=settings.retry_intervals)
                if settings.webhook_max_retries
                else None
            ),
            description=(
                f"{source.name} {safe_label(delivery.event_type or '(untyped)')} "
                f"{safe_label(delivery.event_id)}"
            ),
            meta={
                "source": source.name,
                "event_id": delivery.event_id,
                "type": delivery.event_type,
                "received_at": received_at,
                "attempts": 0,
                "budget": settings.webhook_max_retries,
                "budget_start": 0,
            },
        )
        job.enqueued_at = now()
        job._status = JobStatus.QUEUED
        fields: list[Any] = []
        for name, value in job.to_dict().items():
            if value is not None:
                fields += [name, value]
        return job_id, fields

    async def claim_and_enqueue(
        self,
        source: SourceConfig,
        delivery: Delivery,
        raw: bytes,
        received_at: float,
    ) -> Claim:
        """Raises `redis.RedisError` when Redis cannot take the event; then nothing is kept."""
        job_id, fields = self.job_fields(source, delivery, raw, received_at)
        created = await self.script(
            keys=[
                self.keys.seen(source.name, delivery.event_id),
                self.keys.job(job_id),
                self.keys.queue,
                RQ_QUEUES_SET,
            ],
            args=[source.dedupe_ttl, job_id, *fields],
        )
        return Claim(accepted=bool(created), job_id=job_id)
