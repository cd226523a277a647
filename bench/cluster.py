"""On a Redis Cluster: the receiver on three primaries (each with a replica, appendfsync
always) over the same receiver on one Redis, alternating, with the same wrk load; and the
Redis CPU each claim costs its primary, read from every primary's `INFO` around the runs.

On this 2-core machine the receiver and wrk share the cores with six Redis nodes, so the
ratio says what a cluster costs one receiver (the shard's lookup, a client per shard), not
what it brings: its throughput comes from primaries on machines of their own, which the
CPU per claim sizes (docs/deployment.md's capacity table).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from redis import Redis

from bench.common import SECRET
from bench.ingest import compare, one_run
from tests.cluster.harness import ShardedRedis
from workers.dev.redis_server import RedisServer


def _cpu_and_claims(client: Redis) -> tuple[float, int]:
    """Redis's CPU seconds so far, and the scripts it ran (claims, and the waits' INCRs)."""
    cpu = client.info("cpu")
    stats = client.info("commandstats")
    scripts = sum(
        int(stats.get(f"cmdstat_{name}", {}).get("calls", 0)) for name in ("evalsha", "eval")
    )
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"]), scripts


def cluster_ingest(rounds: int, seconds: int, connections: int, threads: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        single = RedisServer(Path(tmp) / "single").start()
        cluster = ShardedRedis(Path(tmp) / "cluster").start()
        try:
            return _measure(single, cluster, Path(tmp), rounds, seconds, connections, threads)
        finally:
            cluster.stop()
            single.stop()


def _measure(
    single: RedisServer,
    cluster: ShardedRedis,
    tmp: Path,
    rounds: int,
    seconds: int,
    connections: int,
    threads: int,
) -> dict[str, Any]:
    base = {"WEBHOOK_SIGNING_SECRET": SECRET, "WEBHOOK_KEY_PREFIX": "bench"}
    setups = {
        "one": ({**base, "REDIS_URL": single.url}, [Redis.from_url(single.url)]),
        "cluster": (
            {**base, "REDIS_CLUSTER_NODES": cluster.seeds},
            [node.redis() for node in cluster.primaries()],
        ),
    }
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in setups}
    cpu_per_claim: dict[str, list[float]] = {name: [] for name in setups}
    for round_ in range(rounds):
        for name, (env, primaries) in setups.items():
            before = [_cpu_and_claims(p) for p in primaries]
            tag = f"{name}{round_}"
            runs[name].append(one_run("app.main:app", env, tmp, tag, seconds, connections, threads))
            after = [_cpu_and_claims(p) for p in primaries]
            for (cpu0, n0), (cpu1, n1) in zip(before, after, strict=True):
                if n1 > n0:
                    cpu_per_claim[name].append((cpu1 - cpu0) / (n1 - n0) * 1e6)
            for primary in primaries:
                primary.flushall()
    result = compare(runs, "cluster", "one")
    for name, figures in cpu_per_claim.items():
        result[f"{name}_redis_cpu_us_per_claim"] = sorted(figures)[len(figures) // 2]
    return result
