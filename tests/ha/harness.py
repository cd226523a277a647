"""A replicated Redis on loopback: a primary (optionally behind a proxy that can stall its
replication links), replicas and three sentinels, on free ports in a temporary directory.

`make_cluster` (tests/ha/conftest.py) starts one and stops every process it started.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redis import Redis

from workers.dev.redis_server import RedisServer, find_redis_server, free_port

MASTER = "mymaster"
# Sentinel declares a primary down after this long without an answer; 1 s keeps the tests
# short (production: a few seconds, so that a GC pause is not a failover).
DOWN_AFTER_MS = 1000
# Replication tuned for tests: no 5 s wait before a full sync, pings every second.
REPLICA_OPTIONS = {"repl-diskless-sync-delay": "0", "repl-ping-replica-period": "1"}


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if check():
                return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


class LinkProxy:
    """TCP in front of the primary: everything reaches it through this port (sentinels,
    clients, replicas), so that everyone agrees on its address; Sentinel would otherwise
    repoint a replica that replicates through a proxy straight at the primary.
    `stall()` holds what the primary sends on replication links only (connections that
    sent PSYNC), so the replicas fall behind and acknowledge nothing new; `close()` cuts
    every connection, as a dead machine would."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.flowing = threading.Event()
        self.flowing.set()
        self.sockets: list[socket.socket] = []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()  # the primary is gone: as if refused
                continue
            self.sockets += [client, upstream]
            replication = threading.Event()  # set once this connection asks for PSYNC
            for args in (
                (client, upstream, replication, True),
                (upstream, client, replication, False),
            ):
                threading.Thread(target=self._pump, args=args, daemon=True).start()

    def _pump(
        self, source: socket.socket, sink: socket.socket, replication: threading.Event, up: bool
    ) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                if up and (b"PSYNC" in data or b"SYNC" in data):
                    replication.set()
                if not up and replication.is_set():
                    self.flowing.wait()
                sink.sendall(data)
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def stall(self) -> None:
        self.flowing.clear()

    def resume(self) -> None:
        self.flowing.set()

    def close(self) -> None:
        self.server.close()
        for sock in self.sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
                sock.close()
        self.flowing.set()


@dataclass
class Sentinel:
    directory: Path
    monitor_port: int
    auth: dict[str, str] = field(default_factory=dict)  # the data nodes' user and password
    port: int = 0
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> Sentinel:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port()
        lines = [
            f"port {self.port}",
            "bind 127.0.0.1",
            "protected-mode no",
            f"dir {self.directory}",
            "logfile sentinel.log",
            f"sentinel monitor {MASTER} 127.0.0.1 {self.monitor_port} 2",
            f"sentinel down-after-milliseconds {MASTER} {DOWN_AFTER_MS}",
            f"sentinel failover-timeout {MASTER} 5000",
            f"sentinel parallel-syncs {MASTER} 2",
        ]
        if "password" in self.auth:
            lines.append(f"sentinel auth-pass {MASTER} {self.auth['password']}")
        if "username" in self.auth:
            lines.append(f"sentinel auth-user {MASTER} {self.auth['username']}")
        config = self.directory / "sentinel.conf"
        config.write_text("\n".join(lines) + "\n")
        self.process = subprocess.Popen(
            [find_redis_server(), str(config), "--sentinel"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for(lambda: self.client().ping(), 10, f"sentinel on {self.port}")
        return self

    def client(self) -> Redis:
        return Redis(port=self.port, socket_timeout=1, decode_responses=True)

    def state(self) -> dict[str, Any]:
        return dict(self.client().execute_command("SENTINEL", "MASTER", MASTER))

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


@dataclass
class Cluster:
    """A primary, its replicas and (optionally) three sentinels watching them."""

    directory: Path
    replicas: int = 1
    proxied: bool = False  # the primary is reached through a LinkProxy (`links[0]`)
    sentinels: int = 3
    options: dict[str, str] = field(default_factory=dict)  # for every data node
    binary: str | None = None
    nodes: list[RedisServer] = field(default_factory=list)
    links: list[LinkProxy] = field(default_factory=list)
    watchers: list[Sentinel] = field(default_factory=list)

    def start(self) -> Cluster:
        primary = self._node("primary", {})
        primary.start()
        self.nodes.append(primary)
        if self.proxied:
            self.links.append(LinkProxy(primary.port))
        port = self.primary_port
        for n in range(self.replicas):
            replica = self._node(f"replica-{n}", {"replicaof": f"127.0.0.1 {port}"})
            self.nodes.append(replica.start())
        self.wait_synced()
        auth = {"password": self.options["masterauth"]} if "masterauth" in self.options else {}
        for n in range(self.sentinels):
            sentinel = Sentinel(self.directory / f"sentinel-{n}", port, auth)
            self.watchers.append(sentinel.start())
        if self.watchers:
            wait_for(self._sentinels_ready, 20, "the sentinels to see each other and the replicas")
        return self

    def _node(self, name: str, options: dict[str, str]) -> RedisServer:
        merged = {**REPLICA_OPTIONS, **self.options, **options}
        return RedisServer(self.directory / name, options=merged, binary=self.binary)

    def _sentinels_ready(self) -> bool:
        states = [s.state() for s in self.watchers]
        return all(
            int(s["num-other-sentinels"]) == len(self.watchers) - 1
            and int(s["num-slaves"]) >= self.replicas
            for s in states
        )

    @property
    def sentinel_list(self) -> str:
        return ",".join(f"127.0.0.1:{s.port}" for s in self.watchers)

    @property
    def primary(self) -> RedisServer:
        return self.nodes[0]

    @property
    def primary_port(self) -> int:
        """The port everyone knows the first primary by (its proxy's, when proxied)."""
        return self.links[0].port if self.links else self.primary.port

    def client(self, node: RedisServer) -> Redis:
        return Redis(port=node.port, password=node.password, socket_timeout=5)

    def wait_synced(self, primary_node: RedisServer | None = None, timeout: float = 20) -> None:
        """Every running replica has everything the primary wrote so far."""
        current = primary_node or self.primary
        primary = self.client(current)
        others = [n for n in self.nodes if n is not current and n.process is not None]

        last: list[str] = [""]  # what the last look saw, for a timeout's message

        def synced() -> bool:
            info = primary.info("replication")
            offset = info["master_repl_offset"]
            # The primary's view too: it asks only replicas it deems online for an ack.
            seen = [v for k, v in info.items() if k.startswith("slave") and isinstance(v, dict)]
            online = [s for s in seen if s["state"] == "online" and s["offset"] >= offset]
            replicas = [self.client(n).info("replication") for n in others]
            linked = len(online) >= len(others) and all(
                r.get("master_link_status") == "up" and r["slave_repl_offset"] >= offset
                for r in replicas
            )
            settled = [self._aof_settled(n) for n in others]
            last[0] = (
                f"primary offset {offset}, its replicas {seen}; replicas' links and offsets "
                f"{[(r.get('master_link_status'), r.get('slave_repl_offset')) for r in replicas]}"
                f"; AOF settled {settled}"
            )
            if not (linked and all(settled)):
                return False
            # And acknowledging a write: after a diskless sync the primary streams to a
            # replica only from its first acknowledgement, up to a second later.
            primary.incr("harness:synced")
            acked = int(primary.execute_command("WAIT", len(others), 100))
            last[0] += f"; WAIT acknowledged by {acked}"
            return acked >= len(others)

        try:
            wait_for(synced, timeout, "the replicas to catch up")
        except AssertionError as exc:
            raise AssertionError(f"{exc}: {last[0]}") from None

    def _aof_settled(self, node: RedisServer) -> bool:
        info = self.client(node).info("persistence")
        busy = ("loading", "async_loading", "aof_rewrite_in_progress", "aof_rewrite_scheduled")
        return not any(int(info.get(k, 0)) for k in busy)

    def master_address(self) -> tuple[str, int]:
        host, port = self.watchers[0].client().sentinel_get_master_addr_by_name(MASTER)
        return host, int(port)

    def kill_primary(self) -> None:
        """SIGKILL the primary and cut its replication links, as a lost machine would."""
        self.primary.kill()
        for link in self.links:
            link.close()

    def wait_promotion(self, timeout: float = 60) -> RedisServer:
        """The replica that every sentinel now names as the primary. A split vote is tried
        again only after twice the failover timeout (10 s), so a few split votes on a
        loaded machine take tens of seconds: a 30 s wait once ran out in CI. A failed test
        prints the sentinels' logs, where an election is read."""
        old = self.primary_port

        def promoted() -> bool:
            return all(
                int(s.client().sentinel_get_master_addr_by_name(MASTER)[1]) != old
                for s in self.watchers
            )

        wait_for(promoted, timeout, "a replica to be promoted")
        port = self.master_address()[1]
        return next(n for n in self.nodes if n.port == port)

    def rejoin(self, node: RedisServer, primary_node: RedisServer) -> None:
        """Restart a dead node as a replica of the current primary, as its operator would
        (Sentinel converts it too, but only after several of its info periods)."""
        node.options = {**node.options, "replicaof": f"127.0.0.1 {primary_node.port}"}
        node.start()
        self.wait_synced(primary_node)

    def freeze(self, node: RedisServer) -> None:
        assert node.process is not None
        node.process.send_signal(signal.SIGSTOP)

    def thaw(self, node: RedisServer) -> None:
        assert node.process is not None
        node.process.send_signal(signal.SIGCONT)

    def logs(self, lines: int = 80) -> str:
        """The last lines of every server's and sentinel's log, for a failed test."""
        parts = []
        for log in sorted(self.directory.glob("*/*.log")):
            tail = log.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"--- {log.relative_to(self.directory)} ---\n" + "\n".join(tail))
        return "\n".join(parts)

    def stop(self) -> None:
        for node in self.nodes:
            with contextlib.suppress(Exception):
                self.thaw(node)
        for sentinel in self.watchers:
            sentinel.stop()
        for node in self.nodes:
            node.stop()
        for link in self.links:
            link.close()
