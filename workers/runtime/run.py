"""Starting and supervising the worker process (`webhooks worker`, the Procfile's `worker:`).

Imports the handler modules, builds the worker the settings ask for, and rebuilds it when
Redis failure ends its loop, instead of exiting as `rq worker` does:
- the failure is said in one line (`ProblemLog`: what, where, what to check), not as RQ's
  traceback, and again only when it changes or every minute while it lasts;
- Redis is probed every PROBE_EVERY seconds, and the worker is rebuilt as soon as it
  answers (after a restart, or once Sentinel has promoted a replica), not after a backoff;
- the rebuilt worker takes back at once what its predecessor held (`release_previous`),
  and keeps its scheduler's name, so the scheduler's lock is refreshed, not waited out.
"""

from __future__ import annotations

import importlib
import logging
import os
import signal
import sys
import time
import uuid
from pathlib import Path

from redis import Redis
from redis.exceptions import RedisError
from rq import Queue
from rq.exceptions import StopRequested

from app.connection import PROBE, WORKER, sync_client
from app.library_logs import route_library_logs
from app.logs import configure_logging, logger
from app.redis_errors import ProblemLog
from app.settings import ConfigError, Settings
from app.startup_checks import Process, check_startup
from pytest_webhook_receiver.clash import PACKAGES, on_path
from workers.registry import registry
from workers.runtime.entity_versions import EntityVersions
from workers.runtime.recovery import release_previous
from workers.runtime.reports import flush_reports, reporting, worker_reports
from workers.runtime.spans import NO_SPANS, WorkerSpans, worker_spans
from workers.runtime.worker import WebhookWorker
from workers.versions import placement

PROBE_EVERY = 0.5


def import_handlers(settings: Settings) -> None:
    """Import the modules of WEBHOOK_HANDLERS, whose `@handler`s fill the registry."""
    for module in settings.webhook_handlers:
        problem = handlers_clash(module)
        if problem is not None:
            raise ConfigError(f"WEBHOOK_HANDLERS: cannot import {module!r}: {problem}")
        try:
            importlib.import_module(module)
        except ImportError as exc:
            problem = handlers_clash(module, exc) or str(exc)
            raise ConfigError(f"WEBHOOK_HANDLERS: cannot import {module!r}: {problem}") from exc
    unknown = registry.sources() - set(settings.sources)
    if unknown:
        logger.warning(
            "handlers registered for sources that are not configured",
            extra={"sources": sorted(unknown)},
        )
    if not settings.webhook_handlers:
        logger.warning("WEBHOOK_HANDLERS is empty: every event will be settled as ignored")


def handlers_clash(module: str, error: ImportError | None = None) -> str | None:
    """The project's own `app` or `workers` package that a handler module meets, said in one
    line with its fix (`pytest_webhook_receiver/clash.py`): before the import, for a module
    in a package of that name (`app.handlers`: ours is imported already, so theirs is not,
    or, merged with ours, shares a module name); after a failed one, for a failure on a
    module of that name (`from app.models import Order` in `hooks`)."""
    failed = error.name if error is not None else module
    name = (failed or "").partition(".")[0]
    if name not in PACKAGES:
        return None
    theirs = on_path(name, [Path(entry or os.curdir).absolute() for entry in sys.path])
    return None if theirs is None else theirs.said(pytest=False)


def build_worker(
    settings: Settings,
    connection: Redis | None = None,
    scheduler_name: str | None = None,
    spans: WorkerSpans = NO_SPANS,
) -> WebhookWorker:
    connection = connection or sync_client(settings, WORKER)
    queue = Queue(settings.webhook_queue, connection=connection)
    return WebhookWorker(
        [queue],
        connection=connection,
        settings=settings,
        scheduler_name=scheduler_name,
        spans=spans,
        maintenance_interval=settings.webhook_maintenance_interval,
        # Descriptions hold event ids; the JSON state lines already say what ran.
        log_job_description=False,
    )


class RedisLoss(logging.Filter):
    """Keeps the Redis error that ended RQ's loop, instead of RQ's traceback of it: the
    supervisor says it in one line."""

    def __init__(self) -> None:
        super().__init__()
        self.error: BaseException | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], RedisError):
            self.error = record.exc_info[1]
            return False
        return True

    def take(self) -> BaseException | None:
        error, self.error = self.error, None
        return error


def run_worker(settings: Settings, burst: bool = False) -> None:
    """Run until SIGTERM/SIGINT, rebuilding the worker whenever Redis failure ends its loop."""
    configure_logging()
    check_startup(settings, Process.WORKER)
    # RQ's lines in ours, its maintenance at DEBUG (app/library_logs.py).
    route_library_logs("rq")
    import_handlers(settings)
    spans = worker_spans(settings)
    # Handler errors to Sentry (SENTRY_DSN): for the whole process, the fork's child too.
    reported = reporting.set(worker_reports(settings))
    # On a cluster, the version guard's keys are the entity's, not the event's shard's.
    placed = placement.set(EntityVersions.of(settings))
    try:
        supervise(settings, burst, spans)
    finally:
        placement.reset(placed)
        # What is still buffered is sent before the process ends.
        flush_reports()
        reporting.reset(reported)
        spans.shutdown()


def supervise(settings: Settings, burst: bool, spans: WorkerSpans) -> None:
    loss = RedisLoss()
    logging.getLogger("rq.worker").addFilter(loss)
    problems = ProblemLog("worker", settings.cluster_target or settings.redis_target)
    scheduler_name = uuid.uuid4().hex
    previous: list[str] = []
    delay = 1.0
    while True:
        started = time.monotonic()
        worker: WebhookWorker | None = None
        connection = sync_client(settings, WORKER)
        try:
            worker = build_worker(settings, connection, scheduler_name, spans)
            if previous:
                release_previous(connection, worker.queues[0], previous)
            problems.recovered()
            worker.work(burst=burst, with_scheduler=True, logging_level="INFO")
        except StopRequested:
            # The stop signal came while RQ tore the worker down after losing Redis (its
            # handler raises this when the worker is not busy): a stop, not a failure.
            return
        except RedisError as exc:
            # A stop requested while Redis is away ends here too: RQ's own shutdown writes
            # to Redis and fails. Nothing is lost by leaving: a job this worker held is
            # recovered by another worker's sweep, as for a killed worker.
            if worker is not None and worker.stop_signalled:
                return
            problems.report(loss.take() or exc)
        else:
            if burst or worker.stop_signalled:
                return
            lost = loss.take()
            if lost is not None:
                problems.report(lost)
            else:
                logger.warning(
                    "worker loop ended without a stop request; restarting",
                    extra={"retry_in": delay},
                )
        finally:
            if worker is not None:
                previous = [*previous[-4:], worker.name]
                # RQ's teardown stops its command listener only when Redis is there to
                # unsubscribe from: a rebuilt worker must not leave one behind per outage.
                worker.stop_listening()
            connection.close()
        # Between two workers, a signal should simply end the process.
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if problems.current is not None:
            wait_for_redis(settings, problems)
            continue
        time.sleep(delay)
        # Back off a loop that keeps ending by itself; start afresh after one that ran a while.
        delay = 1.0 if time.monotonic() - started > 60 else min(delay * 2, 30.0)


def wait_for_redis(settings: Settings, problems: ProblemLog) -> None:
    """Probe until Redis (Sentinel's primary, when there is one) answers a write."""
    probe = sync_client(settings, PROBE)
    try:
        while True:
            time.sleep(PROBE_EVERY)
            try:
                # A write: a demoted primary answers PING but refuses this (READONLY).
                probe.set(f"{settings.webhook_key_prefix}:worker-probe", "1", px=10_000)
                return
            except RedisError as exc:
                problems.report(exc)
    finally:
        probe.close()
