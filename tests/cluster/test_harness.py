"""The cluster harness itself: keys land where `primary_for_key` says, a write WAITed for
is on the replica, survives its primary's SIGKILL, and stays readable when its slot moves
(with writes going on meanwhile); a port taken under a node's feet, and a start that fails
half-way, leave a working cluster or no process."""

from __future__ import annotations

import socket
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from redis import Redis
from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

from tests.cluster import harness
from tests.cluster.conftest import require
from tests.cluster.harness import Node, ShardedRedis
from tests.ha.harness import wait_for


def tag_in(third: int) -> str:
    """A hash tag whose slot is in the given third of the slots: `redis-cli --cluster
    create` gives each of three primaries one third."""
    size = REDIS_CLUSTER_HASH_SLOTS // 3
    return next(
        tag
        for tag in (f"{{t{n}}}" for n in range(1000))
        if third * size + 10 <= key_slot(tag.encode()) < (third + 1) * size - 10
    )


def replica_of(cluster: ShardedRedis, primary: Node) -> Node:
    return next(n for n in cluster.replicas() if n.primary_id == primary.node_id)


def write_acknowledged(cluster: ShardedRedis, key: str, value: bytes) -> Node:
    """SET on a plain connection to the key's primary, then WAIT for its replica there."""
    primary = cluster.primary_for_key(key)
    with Redis(port=primary.port, single_connection_client=True) as direct:
        direct.set(key, value)
        assert direct.execute_command("WAIT", 1, 1000) == 1
    return primary


def test_keys_with_three_hash_tags_land_on_three_primaries_and_are_read_there(
    make_sharded_redis: Callable[..., ShardedRedis],
) -> None:
    cluster = make_sharded_redis()
    client = cluster.client()
    keys = [f"{tag_in(third)}:key" for third in range(3)]
    for key in keys:
        client.set(key, key.encode())

    owners = [cluster.primary_for_key(key) for key in keys]

    assert len({owner.port for owner in owners}) == 3
    assert {owner.port for owner in owners} == {node.port for node in cluster.primaries()}
    for key, owner in zip(keys, owners, strict=True):
        with Redis(port=owner.port) as direct:
            assert direct.get(key) == key.encode()


def test_a_write_waited_for_on_its_primary_is_on_that_primarys_replica(
    make_sharded_redis: Callable[..., ShardedRedis],
) -> None:
    cluster = make_sharded_redis()
    primary = write_acknowledged(cluster, "{w}:key", b"value")

    replica = replica_of(cluster, primary)
    # A cluster replica answers MOVED unless its connection said READONLY first.
    with Redis(port=replica.port, single_connection_client=True) as direct:
        direct.execute_command("READONLY")
        assert direct.get("{w}:key") == b"value"


@pytest.mark.parametrize("server", ["redis-server", "valkey-server"])
def test_a_write_waited_for_survives_its_primarys_sigkill(
    make_sharded_redis: Callable[..., ShardedRedis], server: str
) -> None:
    cluster = make_sharded_redis(server=server)
    primary = write_acknowledged(cluster, "{f}:key", b"kept")
    replica = replica_of(cluster, primary)

    cluster.kill_primary(primary)
    promoted = cluster.wait_promoted(primary)

    assert promoted is replica and promoted.role == "primary"
    assert cluster.primary_for_key("{f}:key") is promoted
    assert cluster.client().get("{f}:key") == b"kept"


def test_migrate_slot_moves_a_keys_slot_to_the_target_with_its_keys(
    make_sharded_redis: Callable[..., ShardedRedis],
) -> None:
    cluster = make_sharded_redis()
    client = cluster.client()
    # More keys than one MIGRATE batch, so that the slot moves in several.
    values = {f"{{m}}:{n}": f"value-{n}".encode() for n in range(250)}
    client.mset_nonatomic(values)
    source = cluster.primary_for_key("{m}")
    target = next(node for node in cluster.primaries() if node is not source)

    cluster.migrate_slot(key_slot(b"{m}"), target)

    assert cluster.primary_for_key("{m}") is target
    assert client.mget_nonatomic(list(values)) == list(values.values())  # after a MOVED
    assert cluster.client().mget_nonatomic(list(values)) == list(values.values())
    with Redis(port=source.port) as direct:
        assert direct.dbsize() == 0


def test_writes_during_a_slot_migration_are_all_readable_after_it(
    make_sharded_redis: Callable[..., ShardedRedis],
) -> None:
    cluster = make_sharded_redis()
    slot = key_slot(b"{load}")
    source = cluster.primary_for_slot(slot)
    target = next(node for node in cluster.primaries() if node is not source)
    written: list[str] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def write() -> None:
        # Its own client: the ASKs and the MOVED of the move are its to follow.
        writer = cluster.client()
        try:
            while not done.is_set():
                key = f"{{load}}:{len(written)}"
                writer.set(key, key.encode())
                written.append(key)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=write)
    thread.start()
    try:
        wait_for(lambda: len(written) >= 300, 10, "keys in the slot to move")
        before = len(written)
        cluster.migrate_slot(slot, target)
        during = len(written) - before
    finally:
        done.set()
        thread.join(30)

    assert not errors and during > 0
    assert cluster.primary_for_slot(slot) is target
    assert cluster.client().mget_nonatomic(written) == [key.encode() for key in written]


def test_a_node_whose_port_is_taken_before_it_starts_is_started_on_another(
    make_sharded_redis: Callable[..., ShardedRedis], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The race with a parallel test: the pair was free when checked, taken when started.
    pick = harness.cluster_port
    port = pick()
    picks = iter([port])
    monkeypatch.setattr(harness, "cluster_port", lambda: next(picks, None) or pick())
    with socket.create_server(("127.0.0.1", port)):
        cluster = make_sharded_redis()

    assert port not in {node.port for node in cluster.nodes}
    # At least one start more than nodes (a parallel test may have caused another).
    assert len(cluster.started) >= 7 and len(cluster.live()) == 6
    assert f"node-0-{port} (did not start)" in cluster.logs()
    assert "Address already in use" in cluster.logs()


def test_a_start_that_fails_half_way_leaves_no_process_behind(tmp_path: Path) -> None:
    require("redis-server")
    cluster = ShardedRedis(tmp_path)
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            cluster.start(timeout=0.01)  # the nodes are up; `redis-cli` runs out of time
    finally:
        cluster.stop()

    assert len(cluster.started) == 6
    assert all(process.returncode is not None for process in cluster.started)
