"""A read of every shard of a cluster at once, for the dashboard's front: each shard's
result, or what went wrong there in one line, so that a page can show the others' and name
the shard that did not answer."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from redis import Redis
from redis.exceptions import RedisError

from app.connection import OPERATOR, shard_client
from app.keys import Keys
from app.redis_errors import what_went_wrong
from app.settings import Settings
from app.shards import Shards

T = TypeVar("T")
AT_ONCE = 8  # shards read at the same time


def read_each(
    settings: Settings,
    shards: Shards,
    read: Callable[[int, Redis, Keys], T],
    only: Iterable[int] | None = None,
) -> dict[int, T | str]:
    """`read(shard, client, keys)` on every shard (or `only` these), on a connection of its
    own; a str in place of a result says why that shard gave none."""
    target = settings.cluster_target
    assert target is not None
    wanted = list(shards if only is None else only)

    def one(shard: int) -> T | str:
        client = shard_client(settings, shard, OPERATOR)
        try:
            return read(shard, client, settings.keys.sharded(shards.tag(shard)))
        except RedisError as exc:
            return what_went_wrong(exc, target)
        finally:
            client.close()

    with ThreadPoolExecutor(max_workers=max(1, min(AT_ONCE, len(wanted)))) as pool:
        return dict(zip(wanted, pool.map(one, wanted), strict=True))
