"""The one place a Redis client is built: the receiver (asyncio), the worker and its
scheduler, the dashboard and the `webhooks` command all call it with the same settings,
and it has hiredis pack their commands in C (`app/packing.py`).

Each process passes its own timeouts (`Timeouts`): the receiver must answer a provider
within seconds, a worker blocks on its queue for twenty. Where Redis is comes from
`Settings.redis_target` (`app/redis_target.py`): one server, or the primary that Sentinel
names. A Sentinel-managed client asks the sentinels for the primary whenever it opens a
connection, and drops a connection that finds itself on a demoted primary (READONLY), so
after a failover the next command reaches the new primary: no process needs a restart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis
from redis import ConnectionPool, Redis
from redis.asyncio.retry import Retry as AsyncRetry
from redis.asyncio.sentinel import Sentinel as AsyncSentinel
from redis.backoff import ExponentialBackoff
from redis.connection import SSLConnection
from redis.retry import Retry
from redis.sentinel import Sentinel, SentinelManagedConnection
from redis.utils import SENTINEL

from app import packing
from app.cluster import (
    AsyncShardConnection,
    AsyncShardSSLConnection,
    ShardConnection,
    ShardSSLConnection,
    SlotMap,
)
from app.cluster_target import ClusterTarget
from app.redis_target import Address, RedisTarget
from app.settings import ConfigError, Settings
from app.shards import Shards

# On a cluster, a client is a shard's: a process serves one (`shard_workers.for_shard`), or
# acts on each in turn (`workers/ops/shard_fanout.py`). Asked for without one, it is a bug.
NO_SHARD = "REDIS_CLUSTER_NODES: a Redis client on a cluster is a shard's; none was given"


# A sentinel that does not answer within this is skipped for the next one.
SENTINEL_TIMEOUT = 1.0


@dataclass(frozen=True, slots=True)
class Timeouts:
    connect: float | None = 5.0
    read: float | None = None  # None: wait as long as a command takes (a blocking pop)
    # Quick retries of a command whose connection failed; None: redis-py's own (three,
    # backing off up to 10 s: a worker rides out a short blip without noticing it).
    retries: int | None = None
    health_check_interval: int = 0


# The receiver: a provider gets its 503 (and retries) well before its own timeout.
RECEIVER = Timeouts(connect=2.0, read=5.0, retries=2, health_check_interval=30)
# The worker: RQ sets the read timeout above its blocking pop's.
WORKER = Timeouts(connect=5.0)
# The scheduler (no blocking command) and the worker's probe while Redis is away: a primary
# that stops answering must not hang them.
SCHEDULER = Timeouts(connect=5.0, read=30.0)
PROBE = Timeouts(connect=2.0, read=5.0, retries=0)
# The dashboard and the `webhooks` command: a person is waiting, for an answer or an error.
OPERATOR = Timeouts(connect=3.0, read=10.0, retries=1)


def _options(timeouts: Timeouts, retry_class: type[Retry] | type[AsyncRetry]) -> dict[str, Any]:
    # Each client gets the Retry of its own kind: redis-py >= 8.2 converts a synchronous
    # Retry given to an asyncio client, and warns at every start that it did.
    options: dict[str, Any] = {
        "socket_connect_timeout": timeouts.connect,
        "socket_timeout": timeouts.read,
        "health_check_interval": timeouts.health_check_interval,
    }
    if timeouts.retries is not None:
        options["retry"] = retry_class(ExponentialBackoff(cap=0.5, base=0.05), timeouts.retries)
    return options


def _sentinel_kwargs(target: RedisTarget, timeouts: Timeouts) -> dict[str, Any]:
    connect = min(timeouts.connect or SENTINEL_TIMEOUT, SENTINEL_TIMEOUT)
    return {
        "socket_connect_timeout": connect,
        "socket_timeout": SENTINEL_TIMEOUT,
        **target.sentinel,
    }


def _direct(target: RedisTarget) -> dict[str, Any]:
    if target.unix_path is not None:
        return {"unix_socket_path": target.unix_path, **target.node}
    assert target.address is not None
    return {"host": target.address.host, "port": target.address.port, **target.node}


class FollowingConnection(SentinelManagedConnection):
    """redis-py's (blocking) Sentinel connection keeps a connection whose read was
    interrupted, where a plain connection drops it: RQ's warm shutdown raises from its
    signal handler while the worker blocks on its queue, and the worker's last writes then
    read the stale reply on that connection and hang. Dropped, as a plain connection is."""

    def read_response(
        self,
        disable_decoding: bool = False,
        *,
        timeout: float | object = SENTINEL,
        disconnect_on_error: bool | None = True,
        push_request: bool | None = False,
    ) -> Any:
        return super().read_response(
            disable_decoding,
            timeout=timeout,
            disconnect_on_error=disconnect_on_error,
            push_request=push_request,
        )


class FollowingSSLConnection(FollowingConnection, SSLConnection):
    pass


def sync_client(settings: Settings, timeouts: Timeouts = WORKER) -> Redis:
    packing.install()
    if settings.cluster_target is not None:
        if settings.shard is None:
            raise ConfigError(NO_SHARD)
        return shard_client(settings, settings.shard, timeouts)
    target = settings.redis_target
    options = _options(timeouts, Retry)
    if not target.sentinels:
        return Redis(**_direct(target), **options)
    sentinel = Sentinel(
        [(a.host, a.port) for a in target.sentinels],
        sentinel_kwargs=_sentinel_kwargs(target, timeouts),
    )
    connection_class = FollowingSSLConnection if target.tls else FollowingConnection
    client: Redis = sentinel.master_for(
        target.master,
        redis_class=Redis,
        connection_class=connection_class,
        **target.node,
        **options,
    )
    return client


def async_client(settings: Settings, timeouts: Timeouts = RECEIVER) -> aioredis.Redis:
    packing.install()
    target = settings.redis_target
    options = _options(timeouts, AsyncRetry)
    if not target.sentinels:
        return aioredis.Redis(**_direct(target), **options)
    sentinel = AsyncSentinel(
        [(a.host, a.port) for a in target.sentinels],
        sentinel_kwargs=_sentinel_kwargs(target, timeouts),
    )
    client: aioredis.Redis = sentinel.master_for(
        target.master, redis_class=aioredis.Redis, **target.node, **options
    )
    return client


# One slot map per process and cluster: every shard's connections share what it learns.
_SLOT_MAPS: dict[tuple[Address, ...], SlotMap] = {}


def slot_map(target: ClusterTarget) -> SlotMap:
    if target.seeds not in _SLOT_MAPS:
        _SLOT_MAPS[target.seeds] = SlotMap(target.seeds, target.node)
    return _SLOT_MAPS[target.seeds]


def _pool_node(target: ClusterTarget) -> dict[str, Any]:
    # `ssl` is how a client picks its connection class; a pool is given the class itself.
    return {k: v for k, v in target.node.items() if k != "ssl"}


def shard_client(settings: Settings, shard: int, timeouts: Timeouts = WORKER) -> Redis:
    """A client of one shard of the cluster: its connections go to the primary that owns
    the shard's slot, wherever that is when they connect (`app/cluster.py`)."""
    packing.install()
    target = settings.cluster_target
    assert target is not None, "shard_client needs REDIS_CLUSTER_NODES"
    connection_class = ShardSSLConnection if target.tls else ShardConnection
    pool = ConnectionPool(
        connection_class=connection_class,
        slot_map=slot_map(target),
        slot=Shards(settings.webhook_shards).slot(shard),
        **_pool_node(target),
        **_options(timeouts, Retry),
    )
    return Redis(connection_pool=pool)


def async_shard_clients(settings: Settings, timeouts: Timeouts = RECEIVER) -> list[aioredis.Redis]:
    """A client per shard of the cluster, for the receiver."""
    packing.install()
    target = settings.cluster_target
    assert target is not None, "async_shard_clients needs REDIS_CLUSTER_NODES"
    connection_class = AsyncShardSSLConnection if target.tls else AsyncShardConnection
    shards = Shards(settings.webhook_shards)
    clients = []
    for shard in shards:
        pool = aioredis.ConnectionPool(
            connection_class=connection_class,
            slot_map=slot_map(target),
            slot=shards.slot(shard),
            **_pool_node(target),
            **_options(timeouts, AsyncRetry),
        )
        clients.append(aioredis.Redis(connection_pool=pool))
    return clients
