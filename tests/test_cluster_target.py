"""REDIS_CLUSTER_NODES read as REDIS_URL is: seed nodes alone or one URL over them, with the
data nodes' credentials and TLS options; every error one line naming the variable, never a
password."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.cluster_target import parse_cluster_nodes
from app.connection import sync_client
from app.redis_target import Address
from app.settings import ConfigError, Settings
from app.shards import Shards
from tests.conftest import AUTH, SECRET
from workers.runtime.shard_workers import for_shard


def test_seed_nodes_alone_are_read_with_the_default_port() -> None:
    target = parse_cluster_nodes(" redis-1:7000, redis-2 ,[::1]:7002,redis-1:7000")
    assert target.seeds == (
        Address("redis-1", 7000),
        Address("redis-2", 6379),
        Address("::1", 7002),
    )
    assert (target.tls, target.node) == (False, {})


def test_one_url_over_the_seeds_carries_the_data_nodes_credentials_and_tls(
    tmp_path: Path,
) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("-")
    target = parse_cluster_nodes(f"rediss://hooks:s%40cret@n1:6380,n2:6380?ssl_ca_certs={ca}")
    assert target.seeds == (Address("n1", 6380), Address("n2", 6380))
    assert target.tls and target.node == {
        "username": "hooks",
        "password": "s@cret",
        "ssl": True,
        "ssl_ca_certs": str(ca),
    }
    assert "s@cret" not in repr(target) and target.secrets == ["s@cret"]
    assert target.where == "cluster of n1:6380,n2:6380 (TLS)"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", "name at least one node"),
        ("n1:70x0", "the port of n1 must be a number"),
        ("redis://:hunter2@n1:6379/3", "a cluster has only database 0"),
        ("redis://:hunter2@n1:6379?db=2", "a cluster has only database 0"),
        ("redis+sentinel://:hunter2@n1:26379", "the scheme must be redis:// or rediss://"),
        ("redis://:hunter2@n1:6379?ssl_ca_certs=/nowhere", "needs a rediss:// URL"),
        ("redis://:hunter2@n1:6379?timeout=3", "unknown option 'timeout'"),
    ],
)
def test_a_malformed_value_is_one_line_naming_the_variable_and_no_password(
    value: str, expected: str
) -> None:
    with pytest.raises(ConfigError) as error:
        parse_cluster_nodes(value)
    message = str(error.value)
    assert message.startswith("REDIS_CLUSTER_NODES") and expected in message, message
    assert "hunter2" not in message and "\n" not in message


def test_a_cluster_and_sentinels_together_are_refused() -> None:
    with pytest.raises(ConfigError, match="REDIS_CLUSTER_NODES and REDIS_SENTINELS"):
        Settings.load(
            _env_file=None,
            redis_cluster_nodes="n1:6379",
            redis_sentinels="s1:26379",
            webhook_signing_secret=SECRET,
            rq_dashboard_username=AUTH[0],
            rq_dashboard_password=AUTH[1],
        )


def test_a_client_of_a_cluster_is_a_shards_and_none_is_made_without_one() -> None:
    settings = Settings.load(
        redis_cluster_nodes="127.0.0.1:7000", webhook_signing_secret=SECRET, webhook_shards=4
    )
    with pytest.raises(ConfigError, match="a Redis client on a cluster is a shard's"):
        sync_client(settings)
    shard = for_shard(settings, 3)
    client = sync_client(shard)
    assert client.connection_pool.connection_kwargs["slot"] == Shards(4).slot(3)
    client.close()
