"""The version guard: apply an event only if it is newer than what was applied for its entity.

Providers do not keep order: `subscription.updated` v3 may arrive before v2. A handler
declares where the entity and its monotonic version are in the event:

    @handler("stripe", "customer.subscription.updated",
             entity="data.object.id", version="created")

and the worker claims the version atomically in Redis before running it. An event older
than (or as old as) the stored version is settled as `stale` without running the handler.
The claim belongs to the job that made it, so that job's own retries still pass; a
dead-lettered event keeps its claim until it is requeued, purged or the version key expires
(WEBHOOK_LEDGER_TTL). `newer_version()` makes the same check inside a handler.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from redis import Redis

from app.keys import Keys
from workers.event import Event, PermanentError

Selector = str | Callable[[Event], object]

CLAIM_VERSION = """
local current = redis.call('HMGET', KEYS[1], 'v', 'job')
local version = tonumber(ARGV[1])
if current[1] then
  local stored = tonumber(current[1])
  if version < stored or (version == stored and current[2] ~= ARGV[2]) then
    return 0
  end
end
redis.call('HSET', KEYS[1], 'v', ARGV[1], 'job', ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
"""


@dataclass(frozen=True, slots=True)
class JobContext:
    connection: Redis
    keys: Keys
    ttl: int
    owner: str


current: contextvars.ContextVar[JobContext | None] = contextvars.ContextVar(
    "webhook_job", default=None
)
# Where an entity's version is kept when not in the event's own keys: set for a worker
# process on a cluster (`workers/runtime/entity_versions.py`), whose events of one entity
# land in several shards. (source, entity id) -> (connection, key).
Placement = Callable[[str, str], tuple[Redis, str]]
placement: contextvars.ContextVar[Placement | None] = contextvars.ContextVar(
    "webhook_entity_versions", default=None
)


@dataclass(frozen=True, slots=True)
class VersionGuard:
    entity: Selector
    version: Selector


def select(event: Event, selector: Selector) -> object:
    if callable(selector):
        return selector(event)
    value: Any = event.payload
    for part in selector.split("."):
        if not isinstance(value, dict) or part not in value:
            raise PermanentError(f"version guard: {selector!r} is not in the event")
        value = value[part]
    return value


def as_version(value: object) -> str:
    """A number Redis can compare: integers exactly, ISO 8601 times as unix seconds."""
    if isinstance(value, bool):
        raise PermanentError("version guard: a version cannot be a boolean")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        try:
            return str(int(value))
        except ValueError:
            pass
        try:
            return repr(datetime.fromisoformat(value).timestamp())
        except ValueError:
            pass
    raise PermanentError(f"version guard: {value!r} is not a number or an ISO 8601 time")


def newer_version(event: Event, entity: Selector, version: Selector) -> bool:
    """Claim the event's version of its entity; False when a newer or equal one was applied."""
    context = current.get()
    if context is None:
        raise RuntimeError("newer_version() works inside a handler run by the worker")
    entity_id = select(event, entity)
    if entity_id is None or entity_id == "":
        raise PermanentError("version guard: the entity id is empty")
    place = placement.get()
    connection, key = (
        place(event.source, str(entity_id))
        if place is not None
        else (context.connection, context.keys.version(event.source, str(entity_id)))
    )
    claimed = connection.eval(
        CLAIM_VERSION, 1, key, as_version(select(event, version)), context.owner, context.ttl
    )
    return bool(claimed)
