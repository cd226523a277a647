"""Which logical shard of a Redis Cluster holds an event, and the hash tag of its keys.

On a cluster, a Lua script may only touch keys of one hash slot. Every key one event's
claim touches (its dedupe keys, RQ's job hash, queue and queues set, its ledger record and
the ledger index) therefore carries the tag of the event's shard: `{wh03.17}:webhook:seen:…`,
`{wh03.17}:rq:job:…`. A deployment has a fixed number of shards (`WEBHOOK_SHARDS`): an
event's shard is a pure function of its source and id, so changing the count moves ids to
other shards, and a redelivery within the dedupe window would then be claimed again.

A tag is not `{wh:03}`: CRC16 puts sixteen such names on the primaries of a 3-primary
cluster 5/7/4. Shard `i`'s tag is the first name whose slot lies in the `i`-th of `count`
equal ranges of the 16,384 slots, so that primaries owning equal ranges (what
`redis-cli --cluster create` and the managed services make) own equal numbers of shards.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache

from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

# `WEBHOOK_SHARDS`' bounds: one slot range per shard needs at least a slot each, and more
# shards than this only add RQ queues and workers to watch for no spread a cluster uses.
MAX_SHARDS = 1024


@cache
def shard_tag(shard: int, count: int) -> str:
    """The hash tag, braces included, of shard `shard` of `count`."""
    if not 0 <= shard < count <= MAX_SHARDS:
        raise ValueError(f"no shard {shard} of {count}")
    low = shard * REDIS_CLUSTER_HASH_SLOTS // count
    high = (shard + 1) * REDIS_CLUSTER_HASH_SLOTS // count
    attempt = 0
    while True:
        name = f"wh{shard:02d}.{attempt}"
        if low <= key_slot(name.encode()) < high:
            return "{" + name + "}"
        attempt += 1


@dataclass(frozen=True, slots=True)
class Shards:
    """`count` logical shards. `of` says which one holds an event."""

    count: int
    tags: tuple[str, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not 1 <= self.count <= MAX_SHARDS:
            raise ValueError(f"WEBHOOK_SHARDS must be 1 to {MAX_SHARDS}, not {self.count}")
        object.__setattr__(self, "tags", tuple(shard_tag(i, self.count) for i in self))

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.count))

    def of(self, source: str, event_id: str | None) -> int:
        """The shard of one event of `source`. `event_id` None: the source's own shard, for
        a source whose id is unsigned: it dedupes on the signed bytes as well as on the id,
        and both dedupe keys must then be in one slot whatever the id says."""
        name = source if event_id is None else f"{source}\x00{event_id}"
        digest = hashlib.blake2b(name.encode(), digest_size=8).digest()
        return int.from_bytes(digest, "big") % self.count

    def tag(self, shard: int) -> str:
        return self.tags[shard]

    def slot(self, shard: int) -> int:
        return key_slot(self.tags[shard].encode())
