"""Starting the Procfile's real processes, and a TCP proxy that can cut Redis off."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent


def procfile() -> dict[str, str]:
    lines = (ROOT / "Procfile").read_text().splitlines()
    return dict(line.split(": ", 1) for line in lines if line.strip() and ": " in line)


@dataclass
class Process:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def children(self) -> list[int]:
        found = subprocess.run(
            ["pgrep", "-P", str(self.popen.pid)], capture_output=True, text=True, check=False
        )
        return [int(pid) for pid in found.stdout.split()]

    def kill_hard(self) -> None:
        """SIGKILL the process and its children (an RQ worker's work-horse and scheduler)."""
        children = self.children()
        for pid in [self.popen.pid, *children]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.popen.wait()

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def signal(self, sig: int) -> None:
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, sig)

    def stop(self, timeout: float = 15) -> int:
        self.signal(signal.SIGTERM)
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            # A process that hangs at its stop says where first: SIGABRT makes Python's
            # faulthandler (PYTHONFAULTHANDLER, set by `start`) print every thread's stack.
            self.signal(signal.SIGABRT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                return self.popen.wait(3)
            self.signal(signal.SIGKILL)
            return self.popen.wait()


def start(name: str, env: dict[str, str], log_dir: Path, extra_args: str = "") -> Process:
    """Run one Procfile line as honcho would: through a shell, in its own process group."""
    command = f"{procfile()[name]} {extra_args}".strip()
    full_env = {**os.environ, "PYTHONFAULTHANDLER": "1", **env}
    full_env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), full_env["PATH"]])
    log = log_dir / f"{name}-{env.get('PORT', '0')}.log"
    with log.open("wb") as out:
        popen = subprocess.Popen(
            ["/bin/sh", "-c", "exec " + command],
            cwd=ROOT,
            env=full_env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return Process(name, popen, log, int(env.get("PORT", "0")))


class Stack:
    """Starts Procfile processes against one Redis, each on a free port; stops them all."""

    def __init__(self, env: dict[str, str], log_dir: Path) -> None:
        self.env = env
        self.log_dir = log_dir
        self.processes: list[Process] = []

    def start(self, name: str, extra_args: str = "", **overrides: str) -> Process:
        from workers.dev.redis_server import free_port

        env = {**self.env, "PORT": str(free_port()), **overrides}
        process = start(name, env, self.log_dir, extra_args)
        self.processes.append(process)
        if name == "web":
            wait_http(process.url + "/healthz", process)
        return process

    def stop_all(self) -> None:
        for process in self.processes:
            process.stop()


def unmeasured(env: dict[str, str]) -> dict[str, str]:
    """`env` for processes coverage.py should not measure (`make test` measures every Python
    process the suite starts): for a test that starts many of one kind whose code the suite
    measures elsewhere, where measuring each would only cost the suite time."""
    return {k: v for k, v in env.items() if not k.startswith("COVERAGE_")}


def wait_until(check: Callable[[], bool], timeout: float = 20, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def wait_http(
    url: str, process: Process, timeout: float = 20, auth: tuple[str, str] | None = None
) -> None:
    def up() -> bool:
        if process.popen.poll() is not None:
            raise AssertionError(f"{process.name} exited:\n{process.output()}")
        try:
            return httpx.get(url, timeout=1, auth=auth).status_code < 500
        except httpx.HTTPError:
            return False

    wait_until(up, timeout, f"{process.name} at {url}")


@dataclass(eq=False)
class _Link:
    """One client's connection through the proxy, and its upstream one to Redis."""

    client: socket.socket
    upstream: socket.socket | None
    held: bool = False  # a blackhole: nothing forwarded either way
    reset: bool = False  # to be reset (RST) by its pump, at its next look
    closed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def close(self, reset: bool) -> None:
        with self.lock:
            if self.closed:
                return
            self.closed = True
            for sock in (self.client, self.upstream):
                if sock is None:
                    continue
                with contextlib.suppress(OSError):
                    if reset:  # a close with no linger sends RST: the peer reads a reset
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _NO_LINGER)
                    else:
                        sock.shutdown(socket.SHUT_RDWR)
                sock.close()


_NO_LINGER = struct.pack("ii", 1, 0)


@dataclass
class RedisProxy:
    """Forwards TCP to Redis. `drop_requests_with` cuts the connection instead of forwarding a
    command holding those bytes; `cut_requests_at` forwards what comes before those bytes,
    then cuts (a pipeline cut partway); `drop_replies_after` forwards such a command, then
    cuts the connection before its answer gets back.

    A network outage, until `restore`: `cut` resets every connection, and every new one at
    once; `blackhole` forwards nothing, either way, on every connection, new ones included
    (they are accepted and held), as a link that drops every packet, and `restore` resets
    them all (what a client finds when the link comes back: its connections are gone)."""

    target_port: int
    drop_requests_with: bytes | None = None
    cut_requests_at: bytes | None = None
    drop_replies_after: bytes | None = None
    port: int = 0
    # Every chunk a client sent, in order: one per round trip for a pipelined client.
    log: list[bytes] = field(default_factory=list)
    mode: str = "open"  # "open", "cut" or "blackhole"
    _server: socket.socket = field(init=False)
    _links: list[_Link] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> RedisProxy:
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def cut(self) -> None:
        """Reset every connection, and every new one, until `restore`."""
        with self._lock:
            self.mode = "cut"
            for link in self._links:
                link.reset = True

    def blackhole(self) -> None:
        """Forward nothing on any connection, new ones included, until `restore`."""
        with self._lock:
            self.mode = "blackhole"
            for link in self._links:
                link.held = True

    def restore(self) -> None:
        """The link is back: connections held by a blackhole are reset, new ones forwarded."""
        with self._lock:
            for link in self._links:
                if link.held:
                    link.reset = True
                    if link.upstream is None:  # accepted during the blackhole: no pump
                        link.close(reset=True)
            self._links = [link for link in self._links if not link.closed]
            self.mode = "open"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            with self._lock:
                mode = self.mode
                if mode == "cut":
                    _Link(client, None).close(reset=True)
                    continue
                if mode == "blackhole":
                    self._links.append(_Link(client, None, held=True))
                    continue
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            link = _Link(client, upstream)
            with self._lock:
                self._links = [*(x for x in self._links if not x.closed), link]
            sent: list[bytes] = []
            threading.Thread(
                target=self._pump, args=(link, client, upstream, sent, True), daemon=True
            ).start()
            threading.Thread(
                target=self._pump, args=(link, upstream, client, sent, False), daemon=True
            ).start()

    def _pump(
        self,
        link: _Link,
        source: socket.socket,
        sink: socket.socket,
        sent: list[bytes],
        is_request: bool,
    ) -> None:
        # Polled, so that `cut` and `blackhole` act on a connection waiting for data.
        try:
            while not link.reset and not link.closed:
                if link.held:
                    time.sleep(0.02)
                    continue
                if not select.select([source], [], [], 0.05)[0]:
                    continue
                data = source.recv(65536)
                if not data:
                    break
                if is_request:
                    if self.drop_requests_with and self.drop_requests_with in data:
                        break
                    if self.cut_requests_at and self.cut_requests_at in data:
                        sink.sendall(data[: data.index(self.cut_requests_at)])
                        break
                    sent.append(data)
                    self.log.append(data)
                elif self.drop_replies_after and any(self.drop_replies_after in d for d in sent):
                    break
                sink.sendall(data)
        except (OSError, ValueError):
            pass
        link.close(reset=link.reset)

    def close(self) -> None:
        self._server.close()


def send(
    web_url: str,
    event_id: str,
    event_type: str = "order.created",
    timeout: float = 10,
    **extra: object,
) -> httpx.Response:
    """POST one event signed with the test secret."""
    from tests.conftest import event_body, sign

    body = event_body(event_id, event_type, **extra)
    return httpx.post(
        f"{web_url}/webhooks/inbound",
        content=body,
        headers={"X-Signature-256": sign(body)},
        timeout=timeout,
    )


def effects(redis: Any, event_id: str) -> int:
    """How often tests/e2e_handlers.py applied an event."""
    return int(redis.get(f"effects:{event_id}") or 0)
