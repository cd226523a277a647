"""WEBHOOK_REPLICA_ACK_MODE=waitaof: acknowledged once in the replicas' append-only files.

Debian 12's Redis (7.0) has no WAITAOF, so the receiver and the `webhooks replay` command
refuse to start with it, in one line; Valkey 8 (Debian's bookworm-backports, which
`.ci/run` installs) has it, and the 200 then waits for it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from redis import Redis

from app.intake import SyncIntake
from app.main import create_app
from app.settings import ConfigError, Settings
from tests.conftest import SECRET
from tests.ha.harness import Cluster, wait_for
from tests.ha.test_replica_acks import post, post_until_200
from tests.processes import ROOT

VALKEY = shutil.which("valkey-server")


def test_waitaof_on_a_redis_without_it_stops_the_receiver_and_the_replay_command_in_one_line(
    make_cluster: Callable[..., Cluster],
    make_settings: Callable[..., Settings],
    tmp_path: Path,
) -> None:
    cluster = make_cluster(replicas=1, sentinels=0)
    settings = make_settings(
        redis_url=cluster.primary.url, webhook_replica_acks=1, webhook_replica_ack_mode="waitaof"
    )
    with pytest.raises(ConfigError, match=r"has no WAITAOF; WAITAOF needs Redis >= 7\.2"):
        TestClient(create_app(settings)).__enter__()
    with pytest.raises(ConfigError, match="has no WAITAOF"):
        SyncIntake(settings, Redis.from_url(cluster.primary.url))
    # As uvicorn runs it: the startup fails with that line, not a traceback.
    env = {
        **os.environ,
        "REDIS_URL": cluster.primary.url,
        "WEBHOOK_SIGNING_SECRET": SECRET,
        "WEBHOOK_REPLICA_ACKS": "1",
        "WEBHOOK_REPLICA_ACK_MODE": "waitaof",
    }
    uvicorn = Path(sys.executable).parent / "uvicorn"
    result = subprocess.run(
        [str(uvicorn), "app.main:app", "--port", "0"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode != 0
    assert "has no WAITAOF" in result.stderr and "Traceback" not in result.stderr


def test_waitaof_acknowledges_once_the_replica_has_it_in_its_append_only_file(
    make_cluster: Callable[..., Cluster],
    make_client: Callable[..., TestClient],
) -> None:
    if VALKEY is None:
        if os.environ.get("CI") == "true":
            pytest.fail("valkey-server is missing: .ci/run installs it from bookworm-backports")
        pytest.skip(
            "valkey-server not installed (apt-get install -t bookworm-backports valkey-server)"
        )
    cluster = make_cluster(replicas=1, sentinels=0, binary=VALKEY)
    client = make_client(
        redis_url=cluster.primary.url,
        webhook_replica_acks=1,
        # A Valkey 8 replica reports its fsynced offset on its acknowledgements, the
        # latest one often only with the next of its once-a-second acks.
        webhook_replica_ack_timeout=1.5,
        webhook_ack_timeout=3,
        webhook_replica_ack_mode="waitaof",
    )
    assert post_until_200(client, "evt_1") in ("accepted", "duplicate")
    cluster.freeze(cluster.nodes[1])
    assert post(client, "evt_2")[0] == 503
    assert post(client, "evt_1")[0] == 503  # a duplicate answers for a write too
    cluster.thaw(cluster.nodes[1])
    cluster.wait_synced()
    wait_for(lambda: post(client, "evt_2") == (200, "duplicate"), 20, "the retry's answer")
    primary = cluster.client(cluster.primary)
    assert primary.llen("rq:queue:webhooks") == 2  # one job each
