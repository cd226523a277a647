"""Memory: Redis bytes per remembered dedupe key, and per event beyond its payload.

An event is measured three times: accepted (the job holds the payload, queued), settled
(the worker moved the payload into the ledger record; RQ keeps the finished job and its
result for `result_ttl`), and once RQ's keys have expired (what stays for the ledger's TTL:
the record, its index entry, the dedupe key). RQ's expiry is simulated by deleting its keys.
The worker runs one no-op handler per event (`bench/noop_handler.py`), so the ledger keeps
what it keeps of a handled event: its attempt, with the handler's turn.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from redis import Redis

from bench.common import ROOT, bench_settings, event_body, fill
from bench.drain import run_workers


def memory(redis_url: str, count: int, root: Path = ROOT) -> dict[str, Any]:
    """`root`: the checkout whose worker settles the events (a baseline's, to compare)."""
    settings = bench_settings(redis_url)
    connection = Redis.from_url(redis_url)
    connection.flushall()
    base = _used(connection)
    with connection.pipeline(transaction=False) as pipe:
        for n in range(count):
            pipe.set(f"bench:seen:inbound:evt_{n:012d}", "1", ex=86_400)
        pipe.execute()
    per_key = (_used(connection) - base) / count
    usage = int(connection.memory_usage(f"bench:seen:inbound:evt_{0:012d}") or 0)
    connection.flushall()
    base = _used(connection)
    fill(settings, connection, count, "m")
    per_event = (_used(connection) - base) / count
    run_workers(redis_url, "fork", 1, handler=True, root=root)
    settled = (_used(connection) - base) / count
    for key in connection.scan_iter(match="rq:*", count=1000):
        connection.unlink(key)
    kept = (_used(connection) - base) / count
    payload = len(event_body("evt_m_0"))
    return {
        "dedupe_key_bytes": per_key,
        "dedupe_key_usage": usage,
        "accepted_event_bytes": per_event,
        "payload_bytes": payload,
        "beyond_payload_bytes": per_event - payload,
        "settled_event_bytes": settled,
        "kept_event_bytes": kept,
    }


def _used(connection: Redis) -> int:
    return int(connection.info("memory")["used_memory"])
