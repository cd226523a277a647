"""The `receiver` fixture's client: the real receiver app (the same ASGI app, the same Lua
claim), on fakeredis or on a real Redis, and the real worker to run what it queued.

`run_jobs()` runs the worker of the `worker:` process, RQ's loop and this project's
batches, in this process (WEBHOOK_WORKER_MODE=simple: a forked child would write to a
copy of fakeredis, and could not say how each handler ended) until the queue is empty;
each job's outcome is heard through `deliver.watching`, so it names each handler as
`deliver(event)` does. Retries are RQ's: with a retry interval of 0 they run in the same
call (one outcome per attempt), with a longer one they wait for a scheduler, which a
test's worker does not run.
"""

from __future__ import annotations

import signal
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from redis import Redis
from rq import Queue
from rq.job import Job

from app.settings import Settings
from workers.event import Event
from workers.registry import Registered
from workers.runtime.attempt import HandlerRun
from workers.runtime.deliver import watching
from workers.runtime.run import build_worker
from workers.testing.outcome import Outcome, outcome_of

with warnings.catch_warnings():
    # Starlette's TestClient still runs on httpx, and says so on import: in a user's test
    # run that is our choice to make, not a warning of theirs.
    warnings.filterwarnings("ignore", "Using `httpx` with `starlette.testclient`")
    from fastapi.testclient import TestClient

# What RQ's worker sets for itself (stop requests, job deadlines) and does not give back.
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGALRM)


class ReceiverClient(TestClient):
    """A Starlette `TestClient` of the receiver app: `post("/webhooks/stripe", content=body,
    headers=headers)` is answered as a provider would be. `redis` is the store the app
    writes to (fakeredis, or the real Redis given), `settings` what both run with."""

    def __init__(self, app: Any, settings: Settings, redis: Redis) -> None:
        super().__init__(app)
        self.settings = settings
        self.redis = redis

    def jobs(self) -> list[Job]:
        """The jobs queued and not yet run, oldest first (RQ's own `Job`s: `args`, `meta`)."""
        return Queue(self.settings.webhook_queue, connection=self.redis).get_jobs()

    def run_jobs(self) -> list[Outcome]:
        """Run the real worker until the queue is empty; one outcome per job run, in order."""
        outcomes: list[Outcome] = []

        def heard(
            event: Event,
            entries: list[Registered],
            runs: list[HandlerRun],
            error: BaseException | None,
        ) -> None:
            outcomes.append(outcome_of(event, entries, runs, error))

        token = watching.set(heard)
        try:
            with _signals_kept():
                worker = build_worker(self.settings, connection=self.redis)
                worker.work(burst=True, logging_level="WARNING")
        finally:
            watching.reset(token)
        return outcomes


@contextmanager
def _signals_kept() -> Iterator[None]:
    """Give pytest back its signal handlers and timer (pytest-timeout's) once RQ is done."""
    handlers = {number: signal.getsignal(number) for number in SIGNALS}
    left, interval = signal.getitimer(signal.ITIMER_REAL)
    started = time.monotonic()
    try:
        yield
    finally:
        for number, handler in handlers.items():
            signal.signal(number, handler)
        if left > 0:  # what was left of it, less the worker's time: it may be due at once
            left = max(left - (time.monotonic() - started), 0.001)
            signal.setitimer(signal.ITIMER_REAL, left, interval)
