"""What of RQ's worker the batch's begin, settlement and recovery use: exactly this.

They are functions over a worker, not methods of `WebhookWorker`, so that another worker's
recovery can settle a dead one's batch. Typed `Any`, the worker would hide which of RQ's
attributes they rely on; this protocol names them, mypy checks every use against it, and
`tests/test_rq_seams.py` checks that RQ's own worker has each one.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Protocol

from redis import Redis
from redis.client import Pipeline
from rq.executions import Execution


class RQWorker(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def key(self) -> str:
        """Its hash: the counters settlement increments."""
        ...

    @property
    def connection(self) -> Redis: ...

    @property
    def default_result_ttl(self) -> int: ...

    @property
    def executions(self) -> dict[str, Execution]:
        """The executions it runs, by id: begin adds each, settlement removes it."""
        ...

    def increment_failed_job_count(self, pipeline: Pipeline | None = None) -> None: ...

    def increment_total_working_time(
        self, job_execution_time: timedelta, pipeline: Pipeline
    ) -> None: ...


# What the test compares with RQ's worker.
MEMBERS = (
    "name",
    "key",
    "connection",
    "default_result_ttl",
    "executions",
    "increment_failed_job_count",
    "increment_total_working_time",
)
