"""`make run-cluster`: a local Redis Cluster to try cluster mode on: three primaries and
three replicas of `redis-server` on loopback, append-only, each in its own directory under
`var/cluster/`, joined by `redis-cli --cluster create`.

Started afresh at every run (a cluster's nodes remember each other by port, and a port of
the last run may be taken now): its data goes with the stop, as said in the banner.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import click
from redis import Redis
from redis.exceptions import RedisError

from workers.dev.private import private_dir
from workers.dev.redis_server import RedisServer, find_redis_server

NODES = 6  # three primaries, a replica each
# Lower than production's 15 s: a node stopped by hand is failed over within seconds.
NODE_TIMEOUT_MS = "5000"


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _cluster_port() -> int:
    """A free port whose cluster bus port (+10000) is free too, and below 65536."""
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port + 10000 < 65536 and _free(port + 10000):
            return port


def redis_cli(server: str) -> str:
    beside = Path(server).with_name("redis-cli")
    found = str(beside) if beside.exists() else shutil.which("redis-cli")
    if found is None:
        raise RuntimeError("no redis-cli to create the cluster: apt-get install redis-tools")
    return found


@dataclass
class DevCluster:
    root: Path
    nodes: list[RedisServer] = field(default_factory=list)

    @property
    def seeds(self) -> str:
        return ",".join(f"127.0.0.1:{node.port}" for node in self.nodes)

    def start(self, timeout: float = 30.0) -> DevCluster:
        server = find_redis_server()
        shutil.rmtree(self.root, ignore_errors=True)
        private_dir(self.root)
        try:
            while len(self.nodes) < NODES:
                self.nodes.append(self._node(server, len(self.nodes)))
            addresses = [f"127.0.0.1:{node.port}" for node in self.nodes]
            create = [redis_cli(server), "--cluster", "create", *addresses]
            subprocess.run(  # noqa: S603 - our own redis-cli, fixed arguments
                [*create, "--cluster-replicas", "1", "--cluster-yes"],
                check=True,
                capture_output=True,
                timeout=timeout,
            )
            self._wait_ok(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _node(self, server: str, index: int) -> RedisServer:
        for _ in range(10):  # a port taken between the check and the start: another one
            node = RedisServer(
                self.root / f"node-{index}",
                port=_cluster_port(),
                binary=server,
                detached=True,
                options={
                    "cluster-enabled": "yes",
                    "cluster-config-file": "nodes.conf",
                    "cluster-node-timeout": NODE_TIMEOUT_MS,
                },
            )
            try:
                return node.start()
            except (RuntimeError, RedisError):
                node.stop()
        raise RuntimeError(f"no free port pair for cluster node {index}")

    def _wait_ok(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not all(self._ok(node) for node in self.nodes):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the local cluster did not come up; see {self.root}/*/")
            time.sleep(0.1)

    @staticmethod
    def _ok(node: RedisServer) -> bool:
        client = Redis(port=node.port, socket_timeout=1)
        try:
            return b"cluster_state:ok" in client.execute_command("CLUSTER", "INFO")  # type: ignore[no-untyped-call]
        except RedisError:
            return False
        finally:
            client.close()

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


# A laptop's share: a worker process per shard (`webhooks worker` on a cluster).
DEV_SHARDS = "4"
NOT_YET = (
    "not on a cluster yet, nor the Events page and the `webhooks` commands other than "
    "`send` and `config check` (docs/deployment.md)"
)


def start_cluster(env: dict[str, str], root: Path, configured: str | None) -> DevCluster:
    """The local cluster `make run-cluster` runs the stack on, named in `env`."""
    if configured is not None:
        raise click.ClickException(
            f"{configured} is set: make run-cluster starts a cluster of its own; unset it, "
            "or use make run"
        )
    try:
        cluster = DevCluster(root).start()
    except (RuntimeError, subprocess.SubprocessError) as exc:
        raise click.ClickException(f"the local cluster did not start: {exc}") from None
    env["REDIS_CLUSTER_NODES"] = cluster.seeds
    env.setdefault("WEBHOOK_SHARDS", DEV_SHARDS)
    return cluster


def cluster_banner(cluster: DevCluster, lines: list[str], shards: str) -> list[str]:
    """`make run`'s banner, for a stack on the local cluster."""
    said = [
        f"redis:     a local cluster, 3 primaries + 3 replicas: {cluster.seeds} "
        f"(fresh each run; WEBHOOK_SHARDS={shards}, a worker process each)"
    ]
    for line in lines[1:]:
        if line.startswith("dashboard:"):
            said.append(f"dashboard: {NOT_YET}")
        elif not line.startswith(("events:", "operate:")):
            said.append(line)
    return said
