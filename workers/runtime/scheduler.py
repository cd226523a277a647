"""RQ's scheduler (due retries back onto the queue), made to follow Redis wherever it goes.

RQ's scheduler process rebuilds its connection from the worker's connection's keyword
arguments, which cannot express a Sentinel-managed primary, and exits on the first Redis
error; the worker then restarts it at its next maintenance, and only once the scheduler's
lock (held under the old scheduler's random name, for 61 s) has expired. At a failover that
made a retry due in 2 s run 43 s late. Here:
- the scheduler process builds its connection with the same factory as everything else
  (`app/connection.py`), so it follows the primary Sentinel names;
- a Redis error in its loop is logged once (`ProblemLog`) and the loop goes on: the next
  second's heartbeat refreshes (or takes back) its lock and enqueues what is due;
- its name is the worker process's, kept across the worker's rebuilds (`run.py`), so a new
  scheduler refreshes the lock its predecessor held instead of waiting for it to expire;
- it finds what is due by Redis's clock (`DueByRedisTime`): the retry times it compares
  were written by Redis's clock too, by whichever worker scheduled them (`batch.py`), so
  a retry neither runs early nor waits for the skew between two hosts' clocks;
- it closes the worker's ends of the batch child's pipes (`inherited_fds`), which it
  inherits when RQ forks it after the child (at a later maintenance: its lock was another
  worker's, or its process died): holding the task pipe open, it kept the child from ever
  seeing the worker close it, and the worker's teardown waited for the child forever.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterable
from typing import Any, cast

from redis import Redis
from redis.exceptions import RedisError
from rq.registry import ScheduledJobRegistry
from rq.scheduler import RQScheduler
from rq.utils import as_text

from app.connection import SCHEDULER, sync_client
from app.redis_errors import ProblemLog
from app.settings import Settings

STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}
# The ids due by Redis's clock: scored at or before its current whole second, as RQ's
# `get_jobs_to_schedule` compares with the host's.
DUE = """
local now = redis.call('TIME')
return redis.call('ZRANGEBYSCORE', KEYS[1], 0, now[1], 'LIMIT', 0, tonumber(ARGV[1]))
"""


class DueByRedisTime(ScheduledJobRegistry):
    """The scheduled registry, whose due jobs RQ's `enqueue_scheduled_jobs` asks for with
    the host's time: the time given is ignored for Redis's, read in the same script."""

    def get_jobs_to_schedule(
        self, timestamp: int | None = None, chunk_size: int = 1000
    ) -> list[str]:
        due = cast(list[bytes], self.connection.eval(DUE, 1, self.key, chunk_size))
        return [as_text(job_id) for job_id in due]


class FollowingScheduler(RQScheduler):
    def __init__(
        self,
        *args: Any,
        settings: Settings,
        inherited_fds: Callable[[], tuple[int, ...]] = tuple,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.settings = settings
        self.inherited_fds = inherited_fds

    @property
    def connection(self) -> Redis:
        # Built afresh in the scheduler's process (RQ drops it before forking).
        if self._connection is None:
            self._connection = sync_client(self.settings, SCHEDULER)  # type: ignore[assignment]
        return cast(Redis, self._connection)

    def prepare_registries(self, queue_names: Iterable[str] | None = None) -> None:
        """RQ's, with registries that find what is due by Redis's clock."""
        names = queue_names or self._acquired_locks
        self._scheduled_job_registries = [
            DueByRedisTime(name, connection=self.connection, serializer=self.serializer)  # type: ignore[no-untyped-call]
            for name in names
        ]

    def start(self) -> Any:
        """RQ's `start` (fork the scheduler's process), with SIGTERM and SIGINT held back in
        the process until it has its own handlers: one arriving between the fork and
        `work` killed it with its lock held (the worker's stop right after its start), and
        no scheduler took the queue's lock for the next 61 s."""
        held = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            return super().start()  # type: ignore[no-untyped-call]
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)

    def work(self) -> None:
        for fd in self.inherited_fds():  # read in this process: the fds as forked
            with contextlib.suppress(OSError):
                os.close(fd)
        self._install_signal_handlers()  # type: ignore[no-untyped-call]
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)  # one held back runs now
        problems = ProblemLog(
            "scheduler", self.settings.cluster_target or self.settings.redis_target
        )
        born = False
        while not self._stop_requested:
            try:
                if not born:
                    self.register_birth()
                    born = True
                if self.should_reacquire_locks:
                    self.acquire_locks()  # type: ignore[no-untyped-call]
                self.heartbeat()  # type: ignore[no-untyped-call]
                self.enqueue_scheduled_jobs()  # type: ignore[no-untyped-call]
                problems.recovered()
            except RedisError as exc:
                problems.report(exc)
                self._scheduled_job_registries = []
            time.sleep(self.interval)
        # Without Redis its lock expires by itself; the next scheduler of this name
        # refreshes it anyway.
        with contextlib.suppress(RedisError):
            self.stop()  # type: ignore[no-untyped-call]
