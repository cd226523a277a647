"""The batch child (`workers/runtime/horse.py`): replaced when it dies between batches."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from redis import Redis
from rq import Queue

from tests.conftest import Harness
from tests.processes import wait_until
from workers import Event, handler
from workers.runtime.horse import Horse
from workers.runtime.runner import Ended, Started, StopAfterCurrent
from workers.runtime.take import take


def is_zombie(pid: int) -> bool:
    return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


@pytest.fixture
def idle_child_killed(
    make_harness: Callable[..., Harness], redis: Redis
) -> Iterator[tuple[Horse, list[tuple[str, dict[bytes, bytes]]]]]:
    """A child started, then SIGKILLed while it waits for a batch (the OOM killer's way);
    and a batch of one event for it."""
    harness = make_harness()

    @handler("inbound", "order.created")
    def ok(event: Event) -> None:
        redis.rpush("seen", event.id)

    harness.event("h0")
    horse = Horse(redis, harness.settings, StopAfterCurrent())
    horse.ensure()
    os.kill(horse.pid, signal.SIGKILL)
    dead = horse.pid
    wait_until(lambda: is_zombie(dead), 10, "the child to die")
    batch = take(redis, Queue("webhooks", connection=redis), 10, None)
    assert batch is not None
    yield horse, [(e.job.id, e.fields) for e in batch.entries]
    horse.close()


def test_a_child_that_died_while_idle_is_replaced_and_runs_the_next_batch(
    idle_child_killed: tuple[Horse, list[tuple[str, dict[bytes, bytes]]]], redis: Redis
) -> None:
    horse, hashes = idle_child_killed
    dead = horse.pid
    reports: list[Started | Ended] = []
    status = horse.run(hashes, reports.append, lambda: None, 5, lambda: None)
    assert status == 0 and horse.pid not in (0, dead)
    assert [type(r) for r in reports] == [Started, Ended] and isinstance(reports[1], Ended)
    assert reports[1].ok and redis.lrange("seen", 0, -1) == [b"h0"]


def test_a_child_gone_before_it_reads_the_batch_reports_no_job_started(
    idle_child_killed: tuple[Horse, list[tuple[str, dict[bytes, bytes]]]],
    redis: Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    horse, hashes = idle_child_killed
    monkeypatch.setattr(horse, "ensure", lambda: None)  # it dies after the check
    reports: list[Started | Ended] = []
    status = horse.run(hashes, reports.append, lambda: None, 5, lambda: None)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    assert reports == [] and horse.pid == 0 and redis.llen("seen") == 0


def test_a_scheduler_started_after_the_child_does_not_keep_the_worker_from_stopping(
    make_harness: Callable[..., Harness], redis: Redis
) -> None:
    """RQ starts the scheduler's process at a later maintenance (its lock was another
    worker's, or its process died): forked after the child, it inherited the child's task
    pipe, so the child never saw it close and the worker's teardown waited forever."""
    import threading

    from workers.runtime.run import build_worker

    harness = make_harness()
    worker = build_worker(harness.settings, connection=redis)
    worker.horse.ensure()
    child = worker.horse.pid
    worker._start_scheduler()  # as RQ's maintenance does, with the child already there
    assert worker.scheduler is not None and worker.scheduler._process is not None
    stopped = threading.Thread(target=worker.horse.close, daemon=True)
    stopped.start()
    stopped.join(30)
    hung = stopped.is_alive()
    worker.scheduler._process.kill()  # lets a hung close go on, so the test can end
    stopped.join(30)
    assert not hung, "the child never saw its task pipe close"
    assert not Path(f"/proc/{child}").exists()


def test_a_report_larger_than_one_read_arrives_whole(redis: Redis) -> None:
    """A report (or a batch of job hashes) bigger than the pipe's buffer is read in parts;
    the reader hands it over once whole, in either of its two ways of reading."""
    import threading

    from workers.runtime.horse import Reader, send

    big = {"payload": "x" * 200_000}
    for whole in ("read", "read_one"):
        read_fd, write_fd = os.pipe()
        writer = threading.Thread(target=lambda w=write_fd: (send(w, big), os.close(w)))
        writer.start()
        reader = Reader(read_fd)
        found: list[object] = []
        if whole == "read":
            while (part := reader.read()) is not None:
                found += part
        else:
            found.append(reader.read_one())
        writer.join()
        os.close(read_fd)
        assert found == [big], whole


def test_a_handler_that_exits_takes_down_only_the_child(
    make_harness: Callable[..., Harness], redis: Redis, capfd: pytest.CaptureFixture[str]
) -> None:
    import sys

    harness = make_harness()

    @handler("inbound", "order.created")
    def exits(event: Event) -> None:
        sys.exit(3)  # SystemExit is no handler failure: `perform` does not catch it

    harness.event("x0")
    batch = take(redis, Queue("webhooks", connection=redis), 10, None)
    assert batch is not None
    horse = Horse(redis, harness.settings, StopAfterCurrent())
    reports: list[Started | Ended] = []
    hashes = [(e.job.id, e.fields) for e in batch.entries]
    status = horse.run(hashes, reports.append, lambda: None, 5, lambda: None)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 1
    assert [type(r) for r in reports] == [Started] and horse.pid == 0
    assert "the batch child failed" in capfd.readouterr().err
