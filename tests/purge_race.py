"""A requeue that lands between a purge's read and its delete, on a real Redis.

The purging client's first command that would change the job (a write that names its job
id: RQ's ZREM, LREM or DEL, or our purge script) is held back while a second client, a
second operator, requeues the dead letter; then it goes. Whatever the purge read before
(the listing, the confirmation, a status check) said the job was a dead letter.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from redis import Redis

from app.keys import job_id_for
from app.settings import Settings
from workers import Event, handler
from workers.ops.deadletters import DeadLetters

WRITES = frozenset({"ZREM", "LREM", "DEL", "UNLINK", "HDEL", "EVAL", "EVALSHA"})
EVENT_ID = "evt_raced"
EVENT_TYPE = "fail.raced"
JOB_ID = job_id_for("inbound", EVENT_ID)
RECORD = f"webhook:event:inbound:{EVENT_ID}"


@dataclass
class Flaky:
    """A handler of `fail.raced` that fails until told otherwise (before the worker forks),
    and writes a line per run to a file (the forking worker runs it in a child)."""

    log: Path
    fail: bool = True

    @property
    def runs(self) -> int:
        """The raced event's runs."""
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        return lines.count(EVENT_ID)


def flaky_handler(directory: Path) -> Flaky:
    state = Flaky(directory / "raced-runs.log")

    @handler("inbound", EVENT_TYPE)
    def raced(event: Event) -> None:
        with state.log.open("a") as log:
            log.write(f"{event.id}\n")
        if state.fail:
            raise RuntimeError("down for now")

    return state


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


@contextmanager
def requeued_before_the_purge_writes(settings: Settings, job_id: str = JOB_ID) -> Iterator[None]:
    """Within: the first write naming `job_id` from any client but the requeuer's waits for
    the requeue. Checks, on the way out, that the requeue did happen there."""

    def requeue(other: Redis) -> None:
        assert DeadLetters(settings, other).requeue(job_id, by="dashboard")

    with before_the_purge_writes(settings, requeue, job_id):
        yield


@contextmanager
def before_the_purge_writes(
    settings: Settings, act: Callable[[Redis], None], job_id: str = JOB_ID
) -> Iterator[None]:
    """Within: the first write naming `job_id` from any client but a second one waits for
    `act` on that second client. Checks, on the way out, that it did happen there."""
    other = Redis.from_url(settings.redis_url)
    original = Redis.execute_command
    fired: list[bool] = []

    def execute_command(self: Redis, *args: Any, **options: Any) -> Any:
        if (
            not fired
            and self is not other
            and _text(args[0]).upper() in WRITES
            and any(job_id in _text(arg) for arg in args[1:])
        ):
            fired.append(True)
            act(other)
        return original(self, *args, **options)

    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(Redis, "execute_command", execute_command)
            yield
        assert fired == [True], "the purge never wrote to the job"
    finally:
        other.close()


def assert_requeued_and_runs_once(redis: Redis, state: Flaky, drain: Any) -> None:
    """The requeued job is whole: its hash and queue entry are there, its record says
    queued, and the worker runs its handler once."""
    assert redis.exists(f"rq:job:{JOB_ID}") == 1
    assert redis.lrange("rq:queue:webhooks", 0, -1) == [JOB_ID.encode()]
    assert redis.zscore("rq:failed:webhooks", JOB_ID) is None
    assert redis.hget(RECORD, "status") == b"queued"
    state.fail, runs = False, state.runs
    drain()
    assert state.runs == runs + 1
    assert redis.hget(RECORD, "status") == b"done"
