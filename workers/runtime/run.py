"""Starting and supervising the worker process (`webhooks worker`, the Procfile's `worker:`).

Imports the handler modules, builds the worker the settings ask for, and rebuilds it when
Redis failure ends its loop, instead of exiting as `rq worker` does.
"""

from __future__ import annotations

import importlib
import signal
import time

from redis import Redis
from redis.exceptions import RedisError
from rq import Queue

from app.logs import configure_logging, logger
from app.settings import ConfigError, Settings
from workers.registry import registry
from workers.runtime.worker import WebhookWorker


def import_handlers(settings: Settings) -> None:
    """Import the modules of WEBHOOK_HANDLERS, whose `@handler`s fill the registry."""
    for module in settings.webhook_handlers:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ConfigError(f"WEBHOOK_HANDLERS: cannot import {module!r}: {exc}") from exc
    unknown = registry.sources() - set(settings.sources)
    if unknown:
        logger.warning(
            "handlers registered for sources that are not configured",
            extra={"sources": sorted(unknown)},
        )
    if not settings.webhook_handlers:
        logger.warning("WEBHOOK_HANDLERS is empty: every event will be settled as ignored")


def build_worker(settings: Settings, connection: Redis | None = None) -> WebhookWorker:
    connection = connection or Redis.from_url(settings.redis_url)
    queue = Queue(settings.webhook_queue, connection=connection)
    return WebhookWorker(
        [queue],
        connection=connection,
        settings=settings,
        maintenance_interval=settings.webhook_maintenance_interval,
        # Descriptions hold event ids; the JSON state lines already say what ran.
        log_job_description=False,
    )


def run_worker(settings: Settings, burst: bool = False) -> None:
    """Run until SIGTERM/SIGINT, rebuilding the worker whenever Redis failure ends its loop."""
    configure_logging()
    import_handlers(settings)
    delay = 1.0
    while True:
        started = time.monotonic()
        worker: WebhookWorker | None = None
        try:
            worker = build_worker(settings)
            worker.work(burst=burst, with_scheduler=True, logging_level="INFO")
        except RedisError as exc:
            # A stop requested while Redis is away ends here too: RQ's own shutdown writes
            # to Redis and fails. Nothing is lost by leaving: a job this worker held is
            # recovered by another worker's sweep, as for a killed worker.
            if worker is not None and worker.stop_signalled:
                return
            logger.warning(
                "redis unavailable; worker retrying",
                extra={"error": type(exc).__name__, "retry_in": delay},
            )
        else:
            if burst or worker.stop_signalled:
                return
            logger.warning(
                "worker loop ended without a stop request; restarting", extra={"retry_in": delay}
            )
        # Between two workers, a signal should simply end the process.
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        time.sleep(delay)
        # Back off while Redis stays away; start afresh after a worker that ran a while.
        delay = 1.0 if time.monotonic() - started > 60 else min(delay * 2, 30.0)
