"""RQ's own sweep of a queue's registries, by Redis's clock.

RQ's `clean_registries` lets each registry compare its scores with the host's clock. The
started registry's sweep is the abandoned-job sweep: a worker whose clock is ahead would
take another worker's running jobs back as abandoned (`AbandonedJobError`), and the
expiries it compares are written by Redis's clock (`batch.py`). So each registry is
cleaned up here as RQ's function does, in its order, with Redis's time as the cutoff.
`tests/test_rq_seams.py` checks that RQ's function cleans up the same registries.
"""

from __future__ import annotations

from typing import Any

from rq import Queue
from rq.rate_limit import RateLimitRegistry
from rq.registry import (
    BaseRegistry,
    DeferredJobRegistry,
    FailedJobRegistry,
    FinishedJobRegistry,
    ReadyJobRegistry,
    StartedJobRegistry,
)

# The registries RQ's `clean_registries` cleans up, in its order.
REGISTRIES: tuple[type[BaseRegistry], ...] = (
    FinishedJobRegistry,
    StartedJobRegistry,
    FailedJobRegistry,
    DeferredJobRegistry,
    ReadyJobRegistry,
)


def sweep(queue: Queue, exception_handlers: list[Any] | None, now: float) -> None:
    """RQ's `clean_registries(queue, exception_handlers)`, each cutoff at `now` (Redis's
    time); the abandoned-job sweep calls `exception_handlers`, as RQ's does."""
    for registry_class in REGISTRIES:
        registry = registry_class(
            name=queue.name,
            connection=queue.connection,
            job_class=queue.job_class,
            serializer=queue.serializer,
        )
        handlers = exception_handlers if registry_class is StartedJobRegistry else None
        registry.cleanup(timestamp=now, exception_handlers=handlers)
    for rate_limit_registry in RateLimitRegistry.all(queue.connection):
        rate_limit_registry.cleanup()
