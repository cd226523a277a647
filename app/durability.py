"""At startup, tell whether Redis keeps what the receiver acknowledges.

A 200 promises the provider that the event is ours. With AOF off, a Redis crash loses
everything since the last snapshot; with `appendfsync everysec`, up to a second of events;
with an eviction policy, an evicted dedupe key or job is a doubled or lost event. The
receiver says so in one warning per problem, or refuses to start when
WEBHOOK_REQUIRE_DURABLE_REDIS is set. Managed Redis often forbids CONFIG: that is said once,
and startup goes on.

With WEBHOOK_REPLICA_ACKS, startup also checks that the server has the wait command chosen
(WAITAOF is Redis/Valkey >= 7.2) and refuses to start otherwise, and warns when fewer
replicas are connected than the 200s will wait for.
"""

from __future__ import annotations

import redis.asyncio as aioredis
from redis.exceptions import RedisError, ResponseError

from app.formats import text
from app.logs import logger
from app.redis_errors import describe
from app.replication import ReplicaAcks, probe, refusal
from app.settings import ConfigError, Settings


def persistence_problems(config: dict[str, str]) -> list[str]:
    problems = []
    if config.get("appendonly") != "yes":
        problems.append(
            "appendonly is off: acknowledged events are lost if Redis crashes before its "
            "next snapshot; set appendonly yes and appendfsync always"
        )
    elif config.get("appendfsync") != "always":
        problems.append(
            f"appendfsync is {config.get('appendfsync')!r}: acknowledged events of the last "
            "second(s) are lost if Redis crashes; set appendfsync always"
        )
    if config.get("maxmemory-policy", "noeviction") != "noeviction":
        problems.append(
            f"maxmemory-policy is {config.get('maxmemory-policy')!r}: an evicted dedupe key "
            "doubles an event, an evicted job loses one; set maxmemory-policy noeviction"
        )
    return problems


async def check_persistence(redis: aioredis.Redis, settings: Settings) -> list[str]:
    try:
        config: dict[str, str] = {}
        for pattern in ("appendonly", "appendfsync", "maxmemory-policy"):
            answer = await redis.config_get(pattern)
            config.update({text(k): text(v) for k, v in answer.items()})
    except ResponseError:
        logger.warning(
            "cannot read Redis persistence settings (CONFIG GET refused); make sure "
            "the server runs appendonly yes, appendfsync always, noeviction"
        )
        return []
    except RedisError as exc:
        # The one line that says why (a refused TLS handshake, a wrong password); the
        # receiver starts anyway, answers 503 and recovers once Redis can be reached.
        logger.warning(
            f"redis unreachable at startup, persistence not checked: "
            f"{describe(exc, settings.redis_target)}",
            extra={"error": type(exc).__name__},
        )
        return []
    problems = persistence_problems(config)
    for problem in problems:
        logger.warning("redis persistence: " + problem)
    if problems and settings.webhook_require_durable_redis:
        raise ConfigError(
            "WEBHOOK_REQUIRE_DURABLE_REDIS is set and Redis does not keep acknowledged "
            "events safely: " + "; ".join(problems)
        )
    return problems


async def check_replication(redis: aioredis.Redis, settings: Settings) -> None:
    """Refuse to start when the chosen wait is missing; warn when too few replicas are
    connected for a 200 (every delivery would be answered 503 until they are)."""
    acks = ReplicaAcks.of(settings)
    if acks is None:
        return
    try:
        await redis.execute_command(*probe(acks))  # type: ignore[no-untyped-call]
    except ResponseError as exc:
        info = await _info(redis, "server")
        name = "Valkey" if "valkey_version" in info else "Redis"
        version = info.get("valkey_version") or info.get("redis_version") or "?"
        raise refusal(acks, exc, f"{name} {version}") from None
    except RedisError:
        return  # unreachable: said by check_persistence; a batch's wait fails with a 503
    connected = (await _info(redis, "replication")).get("connected_slaves")
    if isinstance(connected, int) and connected < acks.replicas:
        logger.warning(
            f"WEBHOOK_REPLICA_ACKS={acks.replicas} but {connected} replica(s) are connected: "
            "deliveries are answered 503 until enough replicas acknowledge"
        )


async def _info(redis: aioredis.Redis, section: str) -> dict[str, object]:
    try:
        return dict(await redis.info(section))
    except RedisError:
        return {}  # INFO may be refused to an ACL user: then it is not checked
