"""What RQ's worker runs between jobs, as this project runs it: maintenance and the scheduler.

- Maintenance takes back what dead workers held (`recovery.py`) before RQ's own sweeps, one
  worker at a time under RQ's lock key, every WEBHOOK_MAINTENANCE_INTERVAL seconds, or sooner
  when recovery asks (a job seen once in the intermediate queue is due a second look).
- What is expired, abandoned or stuck is decided by Redis's clock (`clock.py`), read once
  per maintenance: the times it compares were written by other workers, whose clocks may
  differ from this one's. RQ's sweep of the intermediate queue is not run: it compares
  its first sightings with the host's clock, and recovery has put back, after two
  sightings 5 s apart, every job it would have failed a minute later.
- The scheduler is `scheduler.FollowingScheduler`, under a name the process keeps across the
  worker's rebuilds (`run.py`), so that it follows a failover within a second or two.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from rq.utils import now
from rq.worker import BaseWorker
from rq.worker_registration import clean_worker_registry

from app.settings import Settings
from workers.runtime.clock import RedisClock
from workers.runtime.recovery import recover
from workers.runtime.scheduler import FollowingScheduler
from workers.runtime.sweep import sweep

# RQ's maintenance lock lasts 899 s: one left by a worker that lost Redis mid-maintenance
# would stop every worker's recovery for 15 minutes. Ours is named after its holder (so the
# holder's next incarnation may drop it) and lasts a minute.
MAINTENANCE_LOCK_SECONDS = 60


class MaintainedWorker(BaseWorker):
    settings: Settings
    scheduler_name: str | None
    # The worker's own file descriptors a process it forks must close (`worker.py`'s).
    inherited_fds: Callable[[], tuple[int, ...]]

    def clean_registries(self) -> None:
        """RQ's maintenance, with what dead workers held taken back first (`recovery.py`)."""
        due: float | None = None
        clock = RedisClock(self.connection)
        for queue in self.queues:
            # One worker at a time, under RQ's lock key; RQ's sweep then finds only the jobs
            # that were running when their worker died.
            key = queue.registry_cleaning_key
            if self.connection.set(key, self.name, nx=True, ex=MAINTENANCE_LOCK_SECONDS):
                try:
                    due = recover(self, queue, clock)
                    sweep(queue, self._exc_handlers, clock.now())
                    clean_worker_registry(queue)
                finally:
                    queue.release_maintenance_lock()  # type: ignore[no-untyped-call]
        # The next maintenance comes early when a job's second sighting is due sooner.
        early = self.maintenance_interval - due if due is not None else 0
        self.last_cleaned_at = now() - timedelta(seconds=max(early, 0))  # type: ignore[assignment]

    def until_maintenance(self) -> float:
        # Asked only once the worker waits for work, after its first maintenance.
        assert self.last_cleaned_at is not None
        elapsed = (now() - self.last_cleaned_at).total_seconds()
        return max(self.maintenance_interval - elapsed, 0.0)

    def _start_scheduler(
        self,
        burst: bool = False,
        logging_level: str | None = "INFO",
        date_format: str = "",
        log_format: str = "",
    ) -> None:
        """RQ's `_start_scheduler`, with the scheduler that follows Redis, under the name
        the process keeps (`scheduler.py`)."""
        scheduler = FollowingScheduler(
            self.queues,
            connection=self.connection,
            settings=self.settings,
            name=self.scheduler_name,
            inherited_fds=self.inherited_fds,
            logging_level=logging_level or "INFO",
            serializer=self.serializer,
        )
        self.scheduler = scheduler
        scheduler.acquire_locks()  # type: ignore[no-untyped-call]
        if not scheduler.acquired_locks:
            return
        if burst:
            try:
                scheduler.register_birth()
                scheduler.enqueue_scheduled_jobs()  # type: ignore[no-untyped-call]
            finally:
                scheduler.release_locks()  # type: ignore[no-untyped-call]
                scheduler.register_death()
        else:
            scheduler.start()
