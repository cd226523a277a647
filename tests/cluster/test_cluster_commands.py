"""The `webhooks` command on a cluster, from a second terminal with only the cluster's
variables: `config check` says which primary holds which shards (or, with no node to ask,
that it could not read them); the commands that read one Redis refuse in one line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from app.keys import Keys, job_id_for
from app.shards import Shards
from tests.cluster.harness import ShardedRedis
from tests.conftest import AUTH, SECRET
from tests.fake_apis import FakeApi
from tests.replay_apis import api_variables, stripe_event

WEBHOOKS = str(Path(sys.executable).parent / "webhooks")


def webhooks(
    tmp_path: Path, nodes: str, *args: str, shards: int = 8, **variables: str
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WEBHOOK_", "REDIS_", "RQ_"))}
    env |= {
        "REDIS_CLUSTER_NODES": nodes,
        "WEBHOOK_SHARDS": str(shards),
        "WEBHOOK_SIGNING_SECRET": SECRET,
        "RQ_DASHBOARD_USERNAME": AUTH[0],
        "RQ_DASHBOARD_PASSWORD": AUTH[1],
        **variables,
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


def test_config_check_says_when_no_node_answers(tmp_path: Path) -> None:
    checked = webhooks(tmp_path, "127.0.0.1:1", "config", "check")
    assert "shards: their owners not read (" in checked.stdout


@pytest.mark.parametrize("command", [("dead", "list"), ("events", "list")], ids=" ".join)
def test_a_command_with_no_node_answering_says_so_in_one_line(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    listed = webhooks(tmp_path, "127.0.0.1:1", *command)
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
    cluster.stop_with_replicas(stopped)
    listed = webhooks(tmp_path, cluster.seeds, "dead", "list")
    assert listed.returncode == 1 and listed.stdout == "0 dead letters\n", listed.stderr
    named = re.findall(
        r"^shard (\d+): cannot reach primary 127\.0\.0\.1:(\d+): ", listed.stderr, re.M
    )
    assert named == [(str(n), str(stopped.port)) for n in on_it]
    assert 0 < len(on_it) < shards.count


def test_replay_stripe_claims_each_event_in_its_shard_and_github_asks_every_shard(
    make_sharded_redis: Callable[..., ShardedRedis], tmp_path: Path
) -> None:
    cluster = make_sharded_redis()
    api = FakeApi(page_size=10).start()
    now = int(time.time())
    api.events = [stripe_event(n, now - n) for n in range(40)]
    variables = {"WEBHOOK_SOURCES": "stripe,github", **api_variables(api)}
    try:
        first = webhooks(
            tmp_path, cluster.seeds, "replay", "stripe", "--since", "0", "--json", **variables
        )
        assert json.loads(first.stdout) == {"fetched": 40, "new": 40, "already_had": 0}, (
            first.stderr
        )
        again = webhooks(
            tmp_path, cluster.seeds, "replay", "stripe", "--since", "0", "--json", **variables
        )
        assert json.loads(again.stdout) == {"fetched": 40, "new": 0, "already_had": 40}
        shards, client = Shards(8), cluster.client()
        keys = Keys("webhook", "webhooks")
        for event in api.events:
            at = keys.sharded(shards.tag(shards.of("stripe", event["id"])))
            assert client.exists(at.job(job_id_for("stripe", event["id"])))
        # Of two failed deliveries, the one a shard has (wherever it is) is not redelivered.
        had = keys.sharded(shards.tag(5)).seen("github", "guid-had")
        client.set(had, 1)
        api.deliveries = [
            github_delivery(2, "guid-had", now - 5),
            github_delivery(1, "guid-new", now - 6),
        ]
        github = webhooks(
            tmp_path,
            cluster.seeds,
            "replay",
            "github",
            "--since",
            str(now - 60),
            "--repo",
            "o/r",
            "--hook-id",
            "42",
            "--json",
            **variables,
        )
        assert json.loads(github.stdout)["redelivered"] == 1, github.stderr
        assert api.redelivered == [1]
    finally:
        api.stop()


def github_delivery(number: int, guid: str, when: int) -> dict[str, object]:
    delivered = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))
    return {
        "id": number,
        "guid": guid,
        "status_code": 502,
        "delivered_at": delivered,
        "event": "push",
    }
