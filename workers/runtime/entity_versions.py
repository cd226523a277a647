"""On a Redis Cluster, where the version guard keeps each entity's newest version.

An event's keys are in its shard, chosen by its id; the events of one entity (a Stripe
subscription's `updated` v2 and v3) have ids of their own and land in different shards. So
an entity's version is not kept in the event's shard but in one chosen by the source and the
entity id alone, reached on that shard's own connection: every event of the entity, whatever
its shard and whichever worker runs it, claims the same key, atomically (`workers/versions.py`).
On one Redis it stays where it was, under the prefix, on the job's connection.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from redis import Redis

from app.connection import SCHEDULER, shard_client
from app.keys import Keys
from app.settings import Settings
from app.shards import Shards

# Apart from event ids in the shard function: an entity named like an event lands elsewhere.
ENTITY = "entity\x00"


@dataclass
class EntityVersions:
    settings: Settings
    shards: Shards
    keys: Keys  # ours, without a shard's tag
    clients: dict[int, Redis] = field(default_factory=dict)

    @classmethod
    def of(cls, settings: Settings) -> EntityVersions | None:
        """The placement of a worker process's settings; None on one Redis."""
        if settings.cluster_target is None:
            return None
        shards = Shards(settings.webhook_shards)
        prefix = settings.webhook_key_prefix
        if settings.shard is not None:  # a shard's process: its prefix carries the tag
            prefix = prefix.removeprefix(f"{shards.tag(settings.shard)}:")
        return cls(settings, shards, Keys(prefix, settings.webhook_queue))

    def shard_of(self, source: str, entity: str) -> int:
        return self.shards.of(source, ENTITY + entity)

    def __call__(self, source: str, entity: str) -> tuple[Redis, str]:
        """The connection and the key of one entity's version."""
        shard = self.shard_of(source, entity)
        if shard not in self.clients:
            # Bounded reads (not the worker's blocking pop's): a hung primary fails the
            # claim, and the handler's attempt, rather than holding it until its timeout.
            self.clients[shard] = shard_client(self.settings, shard, SCHEDULER)
        return self.clients[shard], self.keys.sharded(self.shards.tag(shard)).version(
            source, entity
        )
