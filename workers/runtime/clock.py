"""Redis's clock: the one clock every process compares.

Several processes compare the times they write: a worker's heartbeat expiries (the started
registry's scores) with another worker's sweep, a retry's due time (the scheduled
registry's score) with whichever worker's scheduler holds the lock, a job's first sighting
in the intermediate queue with the next maintenance's, maybe another worker's. Each host's
own clock would make a worker whose clock is behind look dead to the others, and a retry
run early or late by the skew. So every such time is Redis's: read with `TIME`, at most
once per round trip the worker makes anyway (the take script returns it, a heartbeat's
pipeline asks for it), and carried forward between readings on this process's monotonic
clock, which no step of the host's clock moves. Times shown to people (logs, the ledger's
`settled_at`) stay local.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from datetime import UTC, datetime

from redis import Redis

# `TIME`'s reply: seconds and microseconds, as integers (redis-py) or bytes (a script's).
Reading = Sequence[int | bytes | str]


class RedisClock:
    """Redis's time, from the last `TIME` reading and the monotonic time since."""

    def __init__(self, connection: Redis) -> None:
        self.connection = connection
        self._read_at: float | None = None  # Redis's time at the last reading
        self._monotonic_at = 0.0

    def anchor(self, reading: Reading) -> None:
        """Take a `TIME` reply the caller had with another command's (no round trip)."""
        seconds, micros = (int(part) for part in reading)
        self._read_at = seconds + micros / 1_000_000
        self._monotonic_at = time.monotonic()

    def read(self) -> float:
        """Ask Redis now (one round trip)."""
        self.anchor(self.connection.time())
        return self.now()

    def now(self) -> float:
        """Redis's time in seconds since the epoch; read once if it never was."""
        if self._read_at is None:
            return self.read()
        return self._read_at + (time.monotonic() - self._monotonic_at)

    def utc(self) -> datetime:
        return datetime.fromtimestamp(self.now(), UTC)


def due_at(now: float, seconds: float) -> datetime:
    """`seconds` from `now` (Redis's time), rounded up to the whole second: RQ scores the
    scheduled registry in whole seconds, and rounding down would make a retry early."""
    return datetime.fromtimestamp(math.ceil(now + seconds), UTC)
