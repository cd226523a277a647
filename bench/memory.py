"""Memory: Redis bytes per remembered dedupe key, and per accepted event beyond its payload."""

from __future__ import annotations

from typing import Any

from redis import Redis

from bench.common import bench_settings, event_body, fill


def memory(redis_url: str, count: int) -> dict[str, Any]:
    settings = bench_settings(redis_url)
    connection = Redis.from_url(redis_url)
    connection.flushall()
    base = int(connection.info("memory")["used_memory"])
    with connection.pipeline(transaction=False) as pipe:
        for n in range(count):
            pipe.set(f"bench:seen:inbound:evt_{n:012d}", "1", ex=86_400)
        pipe.execute()
    per_key = (int(connection.info("memory")["used_memory"]) - base) / count
    usage = int(connection.memory_usage(f"bench:seen:inbound:evt_{0:012d}") or 0)
    connection.flushall()
    base = int(connection.info("memory")["used_memory"])
    fill(settings, connection, count, "m")
    per_event = (int(connection.info("memory")["used_memory"]) - base) / count
    payload = len(event_body("evt_m_0"))
    return {
        "dedupe_key_bytes": per_key,
        "dedupe_key_usage": usage,
        "accepted_event_bytes": per_event,
        "payload_bytes": payload,
        "beyond_payload_bytes": per_event - payload,
    }
