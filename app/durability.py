"""At startup, tell whether Redis keeps what the receiver acknowledges.

A 200 promises the provider that the event is ours. With AOF off, a Redis crash loses
everything since the last snapshot; with `appendfsync everysec`, up to a second of events;
with an eviction policy, an evicted dedupe key or job is a doubled or lost event. The
receiver says so in one warning per problem, or refuses to start when
WEBHOOK_REQUIRE_DURABLE_REDIS is set. Managed Redis often forbids CONFIG: that is said once,
and startup goes on.
"""

from __future__ import annotations

import redis.asyncio as aioredis
from redis.exceptions import RedisError, ResponseError

from app.formats import text
from app.logs import logger
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
        logger.warning(
            "redis unreachable at startup; persistence not checked",
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
