"""WEBHOOK_REPLICA_ACKS on a Redis that cannot give the acknowledgements asked for: startup
refuses, naming the setting, or warns; a wait refused later is raised, never counted as
replicated."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Callable

import pytest
from redis import Redis
from redis.exceptions import NoPermissionError

from app.connection import async_client
from app.durability import check_replication
from app.replication import ReplicaAcks, check_support_sync
from app.settings import ConfigError, Settings
from workers.dev.redis_server import RedisServer, free_port

VALKEY = shutil.which("valkey-server")


def replication_checked(settings: Settings) -> None:
    async def check() -> None:
        client = async_client(settings)
        try:
            await check_replication(client, settings)
        finally:
            await client.aclose()

    asyncio.run(check())


def test_a_receiver_waiting_for_more_replicas_than_are_connected_warns_at_startup(
    make_settings: Callable[..., Settings], caplog: pytest.LogCaptureFixture
) -> None:
    replication_checked(make_settings(webhook_replica_acks=2))
    assert (
        "WEBHOOK_REPLICA_ACKS=2 but 0 replica(s) are connected: deliveries are answered 503"
        in caplog.text
    )


def test_a_redis_user_denied_wait_stops_the_receiver_naming_the_setting(
    make_settings: Callable[..., Settings], limited_url: Callable[..., str]
) -> None:
    # Denied INFO too, as a managed Redis may: the refusal is said without the version.
    settings = make_settings(redis_url=limited_url("wait", "info"), webhook_replica_acks=1)
    with pytest.raises(ConfigError) as error:
        replication_checked(settings)
    assert str(error.value).startswith("WEBHOOK_REPLICA_ACKS: the server refused WAIT (")
    assert "a managed Redis may not allow it" in str(error.value)


def test_replay_on_a_redis_without_waitaof_is_refused_even_when_info_is_denied(
    make_settings: Callable[..., Settings], limited_url: Callable[..., str]
) -> None:
    settings = make_settings(
        redis_url=limited_url("info"), webhook_replica_acks=1, webhook_replica_ack_mode="waitaof"
    )
    redis = Redis.from_url(settings.redis_url)
    info = Redis.from_url(settings.redis_url.replace("limited:limited-pass@", "")).info()
    if tuple(map(int, str(info["redis_version"]).split(".")[:2])) >= (7, 2):
        pytest.skip("this redis-server has WAITAOF")
    with pytest.raises(ConfigError) as error:
        check_support_sync(redis, ReplicaAcks.of(settings))
    redis.close()
    assert "this server (version unknown) has no WAITAOF; WAITAOF needs Redis >= 7.2" in str(
        error.value
    )


def test_waitaof_on_a_primary_without_appendonly_stops_startup_naming_appendonly(
    make_settings: Callable[..., Settings], make_redis: Callable[..., RedisServer]
) -> None:
    if VALKEY is None:  # Debian 12's Redis 7.0 has no WAITAOF; Valkey 8 has
        if os.environ.get("CI") == "true":
            pytest.fail("valkey-server is missing: .ci/run installs it from bookworm-backports")
        pytest.skip(
            "valkey-server not installed (apt-get install -t bookworm-backports valkey-server)"
        )
    server = make_redis(binary=VALKEY, options={"appendonly": "no"})
    settings = make_settings(
        redis_url=server.url, webhook_replica_acks=1, webhook_replica_ack_mode="waitaof"
    )
    with pytest.raises(ConfigError, match="needs appendonly yes on the primary"):
        replication_checked(settings)


def test_an_unreachable_redis_at_startup_does_not_stop_the_replica_check(
    make_settings: Callable[..., Settings], caplog: pytest.LogCaptureFixture
) -> None:
    settings = make_settings(redis_url=f"redis://127.0.0.1:{free_port()}/0", webhook_replica_acks=1)
    replication_checked(settings)  # no ConfigError: the receiver starts and answers 503
    assert "WEBHOOK_REPLICA_ACKS" not in caplog.text


def test_a_wait_refused_after_startup_is_raised_not_counted_as_replicated(
    make_settings: Callable[..., Settings], limited_url: Callable[..., str]
) -> None:
    settings = make_settings(redis_url=limited_url("wait"), webhook_replica_acks=1)
    acks = ReplicaAcks.of(settings)
    assert acks is not None
    with Redis.from_url(settings.redis_url) as redis, redis.pipeline(transaction=False) as pipe:
        acks.add_to(pipe)
        replies = pipe.execute(raise_on_error=False)
    with pytest.raises(NoPermissionError):
        acks.check(list(replies))
