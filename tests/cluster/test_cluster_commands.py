"""The `webhooks` command on a cluster, from a second terminal with only the cluster's
variables: `config check` says which primary holds which shards (or, with no node to ask,
that it could not read them); the commands that read one Redis refuse in one line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from app.shards import Shards
from tests.cluster.harness import ShardedRedis
from tests.conftest import AUTH, SECRET

WEBHOOKS = str(Path(sys.executable).parent / "webhooks")


def webhooks(
    tmp_path: Path, nodes: str, *args: str, shards: int = 8
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WEBHOOK_", "REDIS_", "RQ_"))}
    env |= {
        "REDIS_CLUSTER_NODES": nodes,
        "WEBHOOK_SHARDS": str(shards),
        "WEBHOOK_SIGNING_SECRET": SECRET,
        "RQ_DASHBOARD_USERNAME": AUTH[0],
        "RQ_DASHBOARD_PASSWORD": AUTH[1],
    }
    return subprocess.run(
        [WEBHOOKS, *args], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )


def test_config_check_names_the_primary_of_every_shard(
    make_sharded_redis: Callable[..., ShardedRedis], tmp_path: Path
) -> None:
    cluster = make_sharded_redis()
    checked = webhooks(tmp_path, cluster.seeds, "config", "check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    said: dict[int, int] = {}
    for ids, port in re.findall(r"^shards? ([\d,-]+) on 127\.0\.0\.1:(\d+)$", checked.stdout, re.M):
        for part in ids.split(","):
            low, _, high = part.partition("-")
            said |= {n: int(port) for n in range(int(low), int(high or low) + 1)}
    shards = Shards(8)
    assert said == {n: cluster.primary_for_slot(shards.slot(n)).port for n in shards}
    assert len(set(said.values())) == 3


def test_config_check_says_when_no_node_answers_and_commands_refuse_a_cluster(
    tmp_path: Path,
) -> None:
    nowhere = "127.0.0.1:1"
    checked = webhooks(tmp_path, nowhere, "config", "check")
    assert "shards: their owners not read (" in checked.stdout
    listed = webhooks(tmp_path, nowhere, "events", "list")
    assert listed.returncode == 1 and "Traceback" not in listed.stderr
    assert listed.stderr.strip().splitlines()[-1] == (
        "Error: REDIS_CLUSTER_NODES: on a cluster, only the receiver, `webhooks worker` and "
        "`webhooks dead` run so far; the dashboard and the other `webhooks` commands do not yet"
    )


def test_dead_list_with_no_node_answering_says_so_in_one_line(tmp_path: Path) -> None:
    listed = webhooks(tmp_path, "127.0.0.1:1", "dead", "list")
    assert listed.returncode == 1 and listed.stdout == ""
    assert listed.stderr.strip().splitlines()[-1] == (
        "Error: cluster of 127.0.0.1:1: cannot connect (no cluster node answered: "
        "127.0.0.1:1: ConnectionError)"
    )


def test_dead_list_names_each_shard_of_a_stopped_primary_and_the_others_answer(
    make_sharded_redis: Callable[..., ShardedRedis], tmp_path: Path
) -> None:
    # The others keep serving their slots while one primary and its replica are gone.
    cluster = make_sharded_redis(options={"cluster-require-full-coverage": "no"})
    shards = Shards(8)
    stopped = cluster.primary_for_slot(shards.slot(0))
    on_it = [n for n in shards if cluster.primary_for_slot(shards.slot(n)) is stopped]
    for node in [stopped, *(n for n in cluster.replicas() if n.primary_id == stopped.node_id)]:
        node.process.kill()
        node.process.wait()
    listed = webhooks(tmp_path, cluster.seeds, "dead", "list")
    assert listed.returncode == 1 and listed.stdout == "0 dead letters\n", listed.stderr
    named = re.findall(
        r"^shard (\d+): cannot reach primary 127\.0\.0\.1:(\d+): ", listed.stderr, re.M
    )
    assert named == [(str(n), str(stopped.port)) for n in on_it]
    assert 0 < len(on_it) < shards.count
