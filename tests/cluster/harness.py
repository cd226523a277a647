"""A Redis Cluster on loopback: three primaries, one replica each, every node a
`redis-server` (or `valkey-server`) in a directory of its own (its nodes.conf, append-only
files and log), bound to 127.0.0.1, joined by `redis-cli --cluster create`.

Why these options:
- `appendonly yes`, `appendfsync always`, `save ""`: the durability the product promises
  (an event answered 200 is fsynced; docs/guarantees.md), so the tests run on it.
- `cluster-node-timeout` 1000 ms: a dead primary's replica is promoted in a few seconds;
  production keeps Redis's 15 s, so that a pause or a slow disk is not a failover.
- `cluster-replica-validity-factor 0`: a replica is promoted however long ago it last heard
  its primary, as on a loaded test machine a 1 s timeout makes that age look long.
- `repl-diskless-sync-delay 0`: a replica's first sync starts at once, not after 5 s;
  `repl-ping-replica-period 1`: its offset moves past 0 within a second, not 10 (CLUSTER
  SLOTS leaves out a replica whose offset is 0, and `start()` waits to see every replica).

A node needs its port P and its cluster bus port P+10000 free. Both are picked below the
kernel's ephemeral range (where `free_port()` and outgoing connections take theirs, so the
suite's other servers never race us there) and checked with a bind; a node that loses its
port between the check and its start (to a parallel test's cluster) is started again on
another. `make_sharded_redis` (tests/cluster/conftest.py) starts one and stops it.
"""

from __future__ import annotations

import random
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from redis import Redis
from redis.backoff import NoBackoff
from redis.cluster import ClusterNode, RedisCluster
from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot
from redis.retry import Retry

from tests.ha.harness import wait_for

BUS_OFFSET = 10_000
PORT_FLOOR = 12_000  # above the usual services' ports (the `make run` tests own 8000-8002)
MIGRATE_BATCH = 100
# Every node's; the module's docstring says why.
OPTIONS = {
    "bind": "127.0.0.1",
    "cluster-enabled": "yes",
    "cluster-replica-validity-factor": "0",
    "appendonly": "yes",
    "appendfsync": "always",
    "save": "",
    "repl-diskless-sync-delay": "0",
    "repl-ping-replica-period": "1",
}
Role = Literal["primary", "replica"]
SlotMap = tuple[tuple[int, int, int, tuple[int, ...]], ...]  # low, high, primary, replicas


def port_pair_free(port: int) -> bool:
    try:
        for candidate in (port, port + BUS_OFFSET):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.bind(("127.0.0.1", candidate))
    except OSError:
        return False
    return True


def cluster_port() -> int:
    """A free port whose bus port is free too, both below the ephemeral range if it
    leaves room (else anywhere below 65536)."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    top = low - BUS_OFFSET if low - BUS_OFFSET > PORT_FLOOR + 1000 else 65_536 - BUS_OFFSET
    for _ in range(1000):
        port = random.randrange(PORT_FLOOR, top)
        if port_pair_free(port):
            return port
    raise RuntimeError(f"no free port pair in {PORT_FLOOR}-{top}")


@dataclass(eq=False)  # a node is its process: compared by identity, usable in a set
class Node:
    directory: Path
    port: int
    process: subprocess.Popen[bytes]
    role: Role = "primary"
    node_id: str = ""
    primary_id: str | None = None  # a replica's primary, by node id

    @property
    def log(self) -> Path:
        return self.directory / "redis.log"

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def redis(self, **options: Any) -> Redis:
        return Redis(port=self.port, **{"socket_timeout": 5, "decode_responses": True, **options})

    def answers(self) -> bool:
        """Whether its own process answers: not one that took the port first (that one
        answers too, or holds the connection silent: a short timeout, no retries)."""
        once = dict(socket_connect_timeout=0.5, socket_timeout=0.5, retry=Retry(NoBackoff(), 0))
        with self.redis(**once) as client:
            return int(client.info("server")["process_id"]) == self.process.pid


@dataclass
class ShardedRedis:
    directory: Path
    server: str = "redis-server"
    node_timeout_ms: int = 1000
    options: dict[str, str] = field(default_factory=dict)  # for every node, over the above
    nodes: list[Node] = field(default_factory=list)
    started: list[subprocess.Popen[bytes]] = field(default_factory=list)  # every attempt's
    clients: list[RedisCluster] = field(default_factory=list)

    def start(self, timeout: float = 30) -> ShardedRedis:
        try:
            for index in range(6):
                self.nodes.append(self._launch(index))
            cli = "valkey-cli" if "valkey" in Path(self.server).name else "redis-cli"
            addresses = [f"127.0.0.1:{node.port}" for node in self.nodes]
            create = ["--cluster", "create", *addresses, "--cluster-replicas", "1"]
            command = [shutil.which(cli) or cli, *create, "--cluster-yes"]
            created = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
            if created.returncode != 0:
                raise RuntimeError(f"{cli} --cluster create failed:\n{created.stdout}")
            self._wait_settled(timeout, "the cluster to be usable")
        except BaseException:
            self.stop()  # nothing left behind; the logs stay for the fixture to print
            raise
        return self

    def _launch(self, index: int, attempts: int = 10) -> Node:
        for _ in range(attempts):
            port = cluster_port()
            directory = self.directory / f"node-{index}-{port}"  # a fresh nodes.conf each
            directory.mkdir(parents=True)
            options = {
                **OPTIONS,
                "port": str(port),
                "dir": str(directory),
                "logfile": str(directory / "redis.log"),
                "cluster-config-file": str(directory / "nodes.conf"),
                "cluster-node-timeout": str(self.node_timeout_ms),
                **self.options,
            }
            args = [arg for name, value in options.items() for arg in (f"--{name}", value)]
            # What it says before it opens its log (a bad option) lands in the log too.
            with (directory / "redis.log").open("ab") as output:
                process = subprocess.Popen(
                    [self.server, *args], stdout=output, stderr=subprocess.STDOUT
                )
            self.started.append(process)
            node = Node(directory, port, process)
            wait_for(lambda: not node.alive or node.answers(), 10, f"node on {port}")
            if node.alive:
                return node
            if "Address already in use" not in node.log.read_text(errors="replace"):
                raise RuntimeError(f"{self.server} exited at its start: see {node.log}")
        raise RuntimeError(f"no port pair that stayed free in {attempts} attempts")

    def live(self) -> list[Node]:
        return [node for node in self.nodes if node.alive]

    def primaries(self) -> list[Node]:
        return [node for node in self.live() if node.role == "primary"]

    def replicas(self) -> list[Node]:
        return [node for node in self.live() if node.role == "replica"]

    @property
    def seeds(self) -> str:
        """Every node started, dead ones too: a setting lists them all."""
        return ",".join(f"127.0.0.1:{node.port}" for node in self.nodes)

    def client(self, **options: Any) -> RedisCluster:
        startup = [ClusterNode("127.0.0.1", node.port) for node in self.live()]
        client = RedisCluster(
            startup_nodes=startup, decode_responses=False, socket_timeout=5, **options
        )
        self.clients.append(client)
        return client

    def slot_map(self, node: Node) -> SlotMap:
        """`CLUSTER SLOTS` as `node` sees it: ranges and the ports serving them."""
        with node.redis() as client:
            reply = client.execute_command("CLUSTER", "SLOTS")
        ranges = [
            (int(low), int(high), int(primary[1]), tuple(sorted(int(r[1]) for r in rest)))
            for low, high, primary, *rest in reply
        ]
        return tuple(sorted(ranges))

    def primary_for_slot(self, slot: int) -> Node:
        asked = self.primaries() or self.live()  # the primaries hear of a move first
        by_port = {node.port: node for node in self.nodes}
        for low, high, port, _ in self.slot_map(asked[0]):
            if low <= slot <= high:
                return by_port[port]
        raise LookupError(f"no node serves slot {slot}")

    def primary_for_key(self, key: str | bytes) -> Node:
        return self.primary_for_slot(key_slot(key.encode() if isinstance(key, str) else key))

    def kill_primary(self, node: Node) -> None:
        """SIGKILL, as a machine lost: no goodbye to the cluster, only what AOF fsynced."""
        if node.role != "primary" or not node.alive:
            raise ValueError(f"node on {node.port} is not a live primary")
        node.process.send_signal(signal.SIGKILL)
        node.process.wait()

    def stop_with_replicas(self, primary: Node) -> None:
        """SIGKILL a primary and its replicas: its slots have no node left to serve them
        (with `cluster-require-full-coverage no`, the other primaries serve theirs)."""
        for node in [primary, *(n for n in self.replicas() if n.primary_id == primary.node_id)]:
            node.process.kill()
            node.process.wait()

    def wait_promoted(self, old_primary: Node, timeout: float = 60) -> Node:
        """The replica of `old_primary` that took over, once the cluster is ok again: only
        it can serve the dead primary's slots, which a settled cluster serves."""
        heirs = {n.port for n in self.nodes if n.primary_id == old_primary.node_id}
        self._wait_settled(timeout, f"a replica of {old_primary.port} to take over")
        heir = next((n for n in self.primaries() if n.port in heirs), None)
        if heir is None:
            raise AssertionError(f"none of {heirs} took over from {old_primary.port}")
        return heir

    def migrate_slot(self, slot: int, target: Node, timeout: float = 10) -> None:
        """Moves `slot` and its keys to `target` as `redis-cli --cluster reshard` does;
        clients writing meanwhile are sent on with ASK, then MOVED."""
        source = self.primary_for_slot(slot)
        if source is target:
            return
        # Keys as bytes: a key need not be UTF-8.
        with source.redis(decode_responses=False) as src, target.redis() as dst:
            dst.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", source.node_id)
            src.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", target.node_id)
            while keys := src.execute_command("CLUSTER", "GETKEYSINSLOT", slot, MIGRATE_BATCH):
                src.execute_command("MIGRATE", "127.0.0.1", target.port, "", 0, 5000, "KEYS", *keys)
        # The new owner first (it takes a new epoch, so its claim wins), then the old one,
        # which would otherwise send clients to a target not yet sure it owns the slot.
        others = [n for n in self.primaries() if n not in (target, source)]
        for node in (target, source, *others):
            with node.redis() as client:
                client.execute_command("CLUSTER", "SETSLOT", slot, "NODE", target.node_id)
        # The replicas hear of it by gossip: wait until every node says so.
        self._wait_settled(timeout, f"every node to see slot {slot} on {target.port}")

    def _unsettled(self) -> str:
        """Why the cluster is not usable yet ("" once it is): every live node must be ok
        and see one slot map that covers every slot and names every live node (a replica
        only once its replication offset is past 0: `repl-ping-replica-period`), and each
        replica must have its link up and be online in its primary's eyes."""
        live = self.live()
        maps = {self.slot_map(node) for node in live}
        if len(maps) != 1:
            return f"the nodes see {len(maps)} slot maps: {maps}"
        (ranges,) = maps
        covered = sum(high - low + 1 for low, high, _, _ in ranges)
        named = {r[2] for r in ranges} | {port for r in ranges for port in r[3]}
        if covered != REDIS_CLUSTER_HASH_SLOTS or named != {n.port for n in live}:
            return f"not every slot, or not every live node and no other, in {ranges}"
        for node in live:
            with node.redis() as client:
                if "cluster_state:ok" not in client.execute_command("CLUSTER", "INFO"):
                    return f"cluster_state is not ok on {node.port}"
                info = client.info("replication")
            if info["role"] == "slave" and info["master_link_status"] != "up":
                return f"the replica on {node.port} has its link down"
            seen = [v for k, v in info.items() if k.startswith("slave") and isinstance(v, dict)]
            if any(replica["state"] != "online" for replica in seen):
                return f"a replica of {node.port} is not online yet: {seen}"
        return ""

    def _wait_settled(self, timeout: float, what: str) -> None:
        last = ["nothing answered"]

        def settled() -> bool:
            last[0] = self._unsettled()
            return not last[0]

        try:
            wait_for(settled, timeout, what)
        except AssertionError as exc:
            raise AssertionError(f"{exc}: {last[0]}") from None
        self._read_roles()

    def _read_roles(self) -> None:
        """Roles as the slot map says, once settled: it names every live node."""
        by_port = {node.port: node for node in self.live()}
        for node in by_port.values():
            with node.redis() as client:
                node.node_id = client.execute_command("CLUSTER", "MYID")
        for _, _, primary, replicas in self.slot_map(self.live()[0]):
            by_port[primary].role, by_port[primary].primary_id = "primary", None
            for port in replicas:
                by_port[port].role, by_port[port].primary_id = "replica", by_port[primary].node_id

    def logs(self, lines: int = 80) -> str:
        """The last lines of every node's log, failed starts' too, for a failed test."""
        about = {node.directory: f"{node.role}, pid {node.process.pid}" for node in self.nodes}
        parts = []
        for log in sorted(self.directory.glob("*/redis.log")):
            label = about.get(log.parent, "did not start")
            text = "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
            parts.append(f"--- {log.parent.name} ({label}) ---\n{text}")
        return "\n".join(parts)

    def stop(self, grace: float = 5) -> None:
        for client in self.clients:
            client.close()
        running = [p for p in self.started if p.poll() is None]
        for process in running:
            process.terminate()
        deadline = time.monotonic() + grace
        for process in running:
            try:
                process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
