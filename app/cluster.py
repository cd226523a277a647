"""Where a shard's slot lives on a Redis Cluster, and connections that follow it there.

Every process talks to a shard through a plain connection to the primary that owns the
shard's slot, not through redis-py's cluster client: RQ's worker takes only a plain client
(it reads `connection_pool`), and a replicas' acknowledgement (`WAIT`) counts the writes
of the connection it is sent on, so it must follow the claims on their own connection.
A connection asks the slot map for the owner each time it connects, as a Sentinel-managed
one asks the sentinels. After a failover the old primary's connections fail; after a
slot's migration the old owner answers MOVED (or ASK, TRYAGAIN, CLUSTERDOWN while the
cluster settles): the map is read again, the connection is dropped, and the error is raised
as a `ConnectionError`, which the client's retries (and, on the receiver, the provider's
retry after a 503) take through a new connection to the new owner.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import redis.asyncio as aioredis
import redis.asyncio.connection as aioconnection
from redis import Redis
from redis.connection import Connection, SSLConnection
from redis.exceptions import (
    AskError,
    ClusterDownError,
    ConnectionError,
    RedisError,
    TryAgainError,
)

from app.redis_target import Address

# The replies that say the slot is elsewhere, or not served yet: not the script's fault.
MOVED_ERRORS = (AskError, TryAgainError, ClusterDownError)  # MovedError is an AskError
# A node that does not answer the map's question within this is skipped for the next.
MAP_TIMEOUT = 2.0


@dataclass(frozen=True, slots=True)
class SlotRange:
    low: int
    high: int
    primary: Address


def _ranges(reply: list[Any]) -> list[SlotRange]:
    """CLUSTER SLOTS' reply: [low, high, [host, port, id], replicas...] per range."""
    found = []
    for low, high, primary, *_ in reply:
        host = primary[0].decode() if isinstance(primary[0], bytes) else str(primary[0])
        found.append(SlotRange(int(low), int(high), Address(host, int(primary[1]))))
    return found


@dataclass
class SlotMap:
    """The primaries' slot ranges, read from the first node that answers: the seeds, then
    every primary the map named before (a seed may be the node that died)."""

    seeds: tuple[Address, ...]
    node: dict[str, Any] = field(default_factory=dict, repr=False)  # credentials, TLS
    ranges: list[SlotRange] = field(default_factory=list)
    # Set when a connection failed or was told the slot moved: the next connection reads
    # the map again (the old ranges stay, as places to ask).
    stale: bool = True
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def forget(self) -> None:
        self.stale = True

    def candidates(self) -> list[Address]:
        known = [r.primary for r in self.ranges]
        return list(dict.fromkeys([*known, *self.seeds]))

    def owner(self, slot: int) -> Address:
        if self.stale:
            self.refresh()
        return self.lookup(slot)

    def lookup(self, slot: int) -> Address:
        found = next((r.primary for r in self.ranges if r.low <= slot <= r.high), None)
        if found is None:
            raise ClusterDownError(f"no primary serves slot {slot}")
        return found

    def refresh(self) -> None:
        with self.lock:
            failures = []
            for address in self.candidates():
                options = {**self.node, "db": 0}
                client = Redis(
                    host=address.host,
                    port=address.port,
                    socket_timeout=MAP_TIMEOUT,
                    socket_connect_timeout=MAP_TIMEOUT,
                    **options,
                )
                try:
                    self.ranges = _ranges(client.execute_command("CLUSTER", "SLOTS"))  # type: ignore[no-untyped-call]
                    self.stale = False
                    return
                except RedisError as exc:
                    failures.append(f"{address}: {type(exc).__name__}")
                finally:
                    client.close()
            raise ConnectionError("no cluster node answered: " + ", ".join(failures))

    async def arefresh(self) -> None:
        """The same, on the receiver's event loop."""
        failures = []
        for address in self.candidates():
            client = aioredis.Redis(
                host=address.host,
                port=address.port,
                socket_timeout=MAP_TIMEOUT,
                socket_connect_timeout=MAP_TIMEOUT,
                **{**self.node, "db": 0},
            )
            try:
                self.ranges = _ranges(await client.execute_command("CLUSTER", "SLOTS"))  # type: ignore[no-untyped-call]
                self.stale = False
                return
            except RedisError as exc:
                failures.append(f"{address}: {type(exc).__name__}")
            finally:
                await client.aclose()
        raise ConnectionError("no cluster node answered: " + ", ".join(failures))


class ShardConnection(Connection):
    """A connection to the primary that owns `slot` (see the module's docstring)."""

    def __init__(self, *, slot_map: SlotMap, slot: int, **kwargs: Any) -> None:
        self.slot_map = slot_map
        self.slot = slot
        super().__init__(**kwargs)  # type: ignore[no-untyped-call]

    def _connect(self) -> Any:
        # Each attempt to open the socket asks where the slot is: retrying one address
        # would wait out every retry on a primary that is gone.
        address = self.slot_map.owner(self.slot)
        self.host, self.port = address.host, address.port
        try:
            return super()._connect()  # type: ignore[no-untyped-call]
        except OSError:
            self.slot_map.forget()
            raise

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().read_response(*args, **kwargs)
        except ConnectionError:
            self.slot_map.forget()  # a dead primary: read the map again at reconnect
            raise
        except MOVED_ERRORS as exc:
            self.slot_map.forget()
            self.disconnect()  # type: ignore[no-untyped-call]
            raise ConnectionError(f"slot {self.slot} is moving: {exc}") from exc


class AsyncShardConnection(aioconnection.Connection):
    """The receiver's: the same, on its event loop."""

    def __init__(self, *, slot_map: SlotMap, slot: int, **kwargs: Any) -> None:
        self.slot_map = slot_map
        self.slot = slot
        super().__init__(**kwargs)

    async def _connect(self) -> None:
        if self.slot_map.stale:
            await self.slot_map.arefresh()
        address = self.slot_map.lookup(self.slot)
        self.host, self.port = address.host, address.port
        try:
            await super()._connect()  # type: ignore[no-untyped-call]
        except OSError:
            self.slot_map.forget()
            raise

    async def read_response(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return await super().read_response(*args, **kwargs)
        except ConnectionError:
            self.slot_map.forget()
            raise
        except MOVED_ERRORS as exc:
            self.slot_map.forget()
            await self.disconnect()
            raise ConnectionError(f"slot {self.slot} is moving: {exc}") from exc


class ShardSSLConnection(ShardConnection, SSLConnection):
    pass


class AsyncShardSSLConnection(AsyncShardConnection, aioconnection.SSLConnection):
    pass
