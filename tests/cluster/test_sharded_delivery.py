"""Events claimed in their shards on a real Redis Cluster (3 primaries, 3 replicas), by the
receiver's intake itself: each event accepted once however often and by whichever of two
intakes it is delivered, from 8 threads, the shards spread over every primary.

Each intake is on its own clients, a client per shard, as a receiver process is
(`app/connection.py`); `test_cluster_stack.py` runs the Procfile's processes."""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import Callable

from redis import Redis

from app.connection import async_shard_clients
from app.intake import AsyncIntake, Claim
from app.keys import Keys
from app.providers import Delivery
from app.settings import Settings
from app.shards import Shards
from tests.cluster.harness import ShardedRedis
from tests.conftest import AUTH, SECRET

SHARDS = Shards(4)


def settings_for(cluster: ShardedRedis) -> Settings:
    return Settings.load(
        _env_file=None,
        redis_cluster_nodes=cluster.seeds,
        webhook_shards=SHARDS.count,
        webhook_signing_secret=SECRET,
        rq_dashboard_username=AUTH[0],
        rq_dashboard_password=AUTH[1],
    )


def deliver(settings: Settings, deliveries: list[tuple[int, str]], threads: int) -> list[Claim]:
    """Each (receiver, event id) claimed by one of two intakes, each on its own shard
    clients, from `threads` threads at once (each its own event loop, as uvicorn workers)."""
    source = settings.sources["inbound"]
    claims: list[Claim] = []
    lock = threading.Lock()

    async def run(share: list[tuple[int, str]]) -> None:
        receivers = [async_shard_clients(settings) for _ in range(2)]
        intakes = [AsyncIntake(settings, clients[0], SHARDS, clients) for clients in receivers]
        done = await asyncio.gather(
            *(
                intakes[receiver].claim_and_enqueue(
                    source, Delivery(event_id, "order.created"), b"{}", 1.0e9
                )
                for receiver, event_id in share
            )
        )
        for client in (c for clients in receivers for c in clients):
            await client.aclose()
        with lock:
            claims.extend(done)

    workers = [
        threading.Thread(target=asyncio.run, args=(run(deliveries[i::threads]),))
        for i in range(threads)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return claims


def test_two_receivers_accept_each_event_once_and_the_shards_spread_over_every_primary(
    make_sharded_redis: Callable[..., ShardedRedis],
) -> None:
    cluster = make_sharded_redis()
    events = [f"evt_{n}" for n in range(3000)]
    deliveries = [(receiver, e) for e in events for receiver in (0, 1, 0, 1)]
    random.Random(39).shuffle(deliveries)

    claims = deliver(settings_for(cluster), deliveries, threads=8)

    assert len(claims) == 12_000
    assert sorted(c.job_id for c in claims if c.accepted) == sorted({c.job_id for c in claims})
    assert sum(c.accepted for c in claims) == 3000
    client = cluster.client()
    keys = Keys("webhook", "webhooks")
    queued = [client.llen(keys.sharded(SHARDS.tag(shard)).queue) for shard in SHARDS]
    assert sum(queued) == 3000 and all(queued)
    assert all(Redis(port=node.port).dbsize() for node in cluster.primaries())
