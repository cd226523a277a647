"""Replica acknowledgements: the receiver at WEBHOOK_REPLICA_ACKS=1 over the same receiver
at 0 (today's behaviour), on a primary with one replica that the bench starts (both
appendfsync always), alternating, with the same wrk load. On loopback the replica's
acknowledgement costs a round trip and its fsync; across machines, add the network's."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from redis import Redis

from bench.common import SECRET
from bench.ingest import compare, one_run
from workers.dev.redis_server import RedisServer

REPLICA = {"repl-diskless-sync-delay": "0"}


def replica_acks(rounds: int, seconds: int, connections: int, threads: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        primary = RedisServer(Path(tmp) / "primary", options=REPLICA).start()
        replica = RedisServer(
            Path(tmp) / "replica", options={**REPLICA, "replicaof": f"127.0.0.1 {primary.port}"}
        )
        try:
            replica.start()
            return _measure(primary.url, Path(tmp), rounds, seconds, connections, threads)
        finally:
            replica.stop()
            primary.stop()


def _measure(
    url: str, tmp: Path, rounds: int, seconds: int, connections: int, threads: int
) -> dict[str, Any]:
    env = {"REDIS_URL": url, "WEBHOOK_SIGNING_SECRET": SECRET, "WEBHOOK_KEY_PREFIX": "bench"}
    runs: dict[str, list[dict[str, Any]]] = {"0": [], "1": []}
    for round_ in range(rounds):
        for acks in ("0", "1"):
            tagged = {**env, "WEBHOOK_REPLICA_ACKS": acks}
            tag = f"acks{acks}r{round_}"
            runs[acks].append(
                one_run("app.main:app", tagged, tmp, tag, seconds, connections, threads)
            )
            Redis.from_url(url).flushall()
    return compare({f"acks{n}": results for n, results in runs.items()}, "acks1", "acks0")
