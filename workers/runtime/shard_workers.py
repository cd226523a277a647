"""`webhooks worker` on a Redis Cluster: which shards a process serves, and one process per
shard under a supervisor.

RQ names its keys with one prefix per process (RQ_KEY_PREFIX, read when rq is imported), so
a shard's worker is a process of its own: `webhooks worker --shards 7` serves shard 7 itself,
under `<tag>:rq`, on a connection that follows the shard's slot (`app/cluster.py`).
`webhooks worker` (every shard) or `--shards 0-7` starts one such process per shard, passes
them SIGTERM and SIGINT, and starts again one that ended by itself, backing off, so that no
shard is left without a worker.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from types import FrameType

from app import keys
from app.logs import logger
from app.settings import ConfigError, Settings
from app.shards import Shards

RQ_PREFIX_VARIABLE = "RQ_KEY_PREFIX"
# A shard's process that ends by itself is started again after this, doubled each time it
# ends within a minute, up to MAX_DELAY.
FIRST_DELAY = 1.0
MAX_DELAY = 30.0


def parse_shards(text: str | None, shards: Shards) -> list[int]:
    """`--shards`: `7`, `0-7`, `0-3,8-11`; every shard when not given."""
    if text is None:
        return list(shards)
    chosen: list[int] = []
    for part in text.split(","):
        low, _, high = part.strip().partition("-")
        try:
            first, last = int(low), int(high or low)
        except ValueError:
            raise ConfigError(f"--shards: {part.strip()!r} is not N or N-M") from None
        if not 0 <= first <= last < shards.count:
            raise ConfigError(
                f"--shards: {part.strip()} is outside 0-{shards.count - 1} (WEBHOOK_SHARDS)"
            )
        chosen += [n for n in range(first, last + 1) if n not in chosen]
    return chosen


def for_shard(settings: Settings, shard: int) -> Settings:
    """The settings of a worker process of one shard: our keys under the shard's hash tag,
    as RQ's are under RQ_KEY_PREFIX (`claim_rq_prefix`), and its connection following the
    shard's slot (`app/connection.py`)."""
    tag = Shards(settings.webhook_shards).tag(shard)
    copied = settings.model_copy(
        update={"webhook_key_prefix": f"{tag}:{settings.webhook_key_prefix}"}
    )
    copied._shard = shard
    return copied


def rq_prefix(shards: Shards, shard: int) -> str:
    return keys.rq_prefix(shards.tag(shard))


def claim_rq_prefix(prefix: str) -> None:
    """Set RQ's prefix for this process, before rq is imported (it reads it then)."""
    if "rq" in sys.modules:
        from rq.defaults import RQ_KEY_PREFIX

        if prefix != RQ_KEY_PREFIX:
            raise ConfigError(
                f"RQ was imported with the prefix {RQ_KEY_PREFIX!r} before the shard's "
                f"{prefix!r} could be set"
            )
    os.environ[RQ_PREFIX_VARIABLE] = prefix


@dataclass
class Child:
    shard: int
    command: list[str]
    popen: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    delay: float = FIRST_DELAY
    due: float = 0.0  # when to start it again

    def start(self) -> None:
        self.popen = subprocess.Popen(self.command)  # noqa: S603 - our own command line
        self.started = time.monotonic()


@dataclass
class ShardSupervisor:
    children: list[Child]
    burst: bool = False
    stopping: bool = field(default=False, init=False)

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        for child in self.children:
            child.start()
        logger.info("shard workers started", extra={"shards": [c.shard for c in self.children]})
        worst = 0
        while any(c.popen is not None for c in self.children):
            time.sleep(0.2)
            for child in self.children:
                worst = max(worst, self._look_after(child))
        return worst

    def _look_after(self, child: Child) -> int:
        now = time.monotonic()
        if child.popen is None:
            if not self.stopping and not self.burst and now >= child.due:
                child.start()
            return 0
        code = child.popen.poll()
        if code is None:
            return 0
        child.popen = None
        if self.stopping:
            return 0  # asked to stop: a stop, whatever the last run of a failing child said
        if self.burst:
            return code if code >= 0 else 1  # killed by a signal
        ran = now - child.started
        child.delay = FIRST_DELAY if ran > 60 else min(child.delay * 2, MAX_DELAY)
        child.due = now + child.delay
        logger.warning(
            "shard worker ended by itself; starting it again",
            extra={"shard": child.shard, "exit": code, "retry_in": child.delay},
        )
        return 0

    def _stop(self, signum: int, frame: FrameType | None) -> None:
        self.stopping = True
        for child in self.children:
            if child.popen is not None and child.popen.poll() is None:
                child.popen.send_signal(signal.SIGTERM)


def shard_commands(shards: list[int], burst: bool, paths: tuple[str, ...]) -> list[Child]:
    options = [*(["--burst"] if burst else []), *(f"--path={p}" for p in paths)]
    return [
        Child(shard, [sys.executable, "-m", "workers", "worker", f"--shards={shard}", *options])
        for shard in shards
    ]
