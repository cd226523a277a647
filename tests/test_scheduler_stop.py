"""A worker stopped while its scheduler process is starting: the scheduler still lets go of
the queue's lock (else no scheduler of the next worker takes it for 61 s, and due retries
wait that long)."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

from redis import Redis
from rq import Queue

from app.keys import Keys
from app.settings import Settings
from workers.runtime.scheduler import FollowingScheduler


def test_a_sigterm_before_the_scheduler_process_has_its_handlers_still_releases_its_lock(
    redis: Redis, make_settings: Callable[..., Settings]
) -> None:
    settings = make_settings()
    keys = Keys(settings.webhook_key_prefix, settings.webhook_queue)
    reached_read, reached_write = os.pipe()
    go_read, go_write = os.pipe()

    def startup() -> tuple[int, ...]:
        # The first thing the scheduler process runs, before it installs its handlers:
        # held here until the SIGTERM has been sent.
        os.write(reached_write, b"x")
        os.read(go_read, 1)
        return ()

    scheduler = FollowingScheduler(
        [Queue(settings.webhook_queue, connection=redis)],
        connection=redis,
        settings=settings,
        inherited_fds=startup,
        name="scheduler-under-test",
    )
    scheduler.acquire_locks()  # as the worker does, before it forks the process
    assert redis.exists(keys.scheduler_lock)
    process = scheduler.start()
    os.read(reached_read, 1)
    os.kill(process.pid, signal.SIGTERM)
    os.write(go_write, b"x")
    process.join(timeout=30)
    for fd in (reached_read, reached_write, go_read, go_write):
        os.close(fd)
    assert process.exitcode == 0
    assert not redis.exists(keys.scheduler_lock)
