"""The child process that runs handlers for the worker: forked once, fed batch after batch,
replaced when it dies.

Isolation without a fork per job (or per batch: a fork, a new Redis connection and the
copy-on-write of a Python heap cost milliseconds): a crashing, leaking or hung handler
still takes down only this child. The worker sends each batch as the job hashes it took;
the child reports through a pipe as it goes (`runner.Started`, `runner.Ended`), then
`Done`. If the pipe ends before `Done`, the child died mid-batch, and the worker knows
from the reports which jobs ended and which one was running.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pickle
import select
import signal
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from redis import Redis
from redis.exceptions import RedisError

from app.logs import logger
from app.settings import Settings
from workers.runtime.reports import flush_reports
from workers.runtime.runner import Ended, Started, StopAfterCurrent, child_signals, run_batch
from workers.runtime.spans import NO_SPANS, WorkerSpans
from workers.runtime.take import read_job

_LENGTH = struct.Struct("!I")
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


@dataclass(frozen=True, slots=True)
class Done:
    """The child ran (or, asked to stop, skipped) every job of the batch."""


Report = Started | Ended | Done


def send(fd: int, message: Any) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_LENGTH.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


class Reader:
    """Length-prefixed pickles from a pipe, as they arrive."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = b""

    def read(self) -> list[Any] | None:
        """What is complete so far; None once the writer is gone and nothing is left."""
        chunk = os.read(self.fd, 1 << 16)
        if not chunk:
            return None
        self.buffer += chunk
        found = []
        while len(self.buffer) >= _LENGTH.size:
            (size,) = _LENGTH.unpack_from(self.buffer)
            end = _LENGTH.size + size
            if len(self.buffer) < end:
                break
            found.append(pickle.loads(self.buffer[_LENGTH.size : end]))  # noqa: S301
            self.buffer = self.buffer[end:]
        return found

    def read_one(self) -> Any | None:
        """Block for the next whole message; None at the end of the pipe."""
        while True:
            if len(self.buffer) >= _LENGTH.size:
                (size,) = _LENGTH.unpack_from(self.buffer)
                if len(self.buffer) >= _LENGTH.size + size:
                    message = pickle.loads(self.buffer[_LENGTH.size : _LENGTH.size + size])  # noqa: S301
                    self.buffer = self.buffer[_LENGTH.size + size :]
                    return message
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk


def die_with_parent(parent: int) -> None:
    """In the child: be killed when the worker dies. A child of a SIGKILLed worker would
    otherwise finish its handler while recovery hands the same job to another worker."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it died before the request took effect
        # pragma below: the worker would have to die between the fork and the prctl, a
        # window no test can aim at.
        os._exit(1)  # pragma: no cover


class Horse:
    def __init__(
        self,
        connection: Redis,
        settings: Settings,
        stop: StopAfterCurrent,
        spans: WorkerSpans = NO_SPANS,
    ) -> None:
        self.connection = connection
        self.settings = settings
        self.stop = stop
        self.spans = spans
        self.pid = 0
        self.tasks = self.reports = -1
        self.reader: Reader | None = None

    def ensure(self) -> None:
        if self.pid and os.waitpid(self.pid, os.WNOHANG)[0] == self.pid:
            # It died between batches (the OOM killer, a stray kill): replace it now.
            logger.warning("the batch child died while idle; starting another")
            self.forget()
        if self.pid:
            return
        task_read, task_write = os.pipe()
        report_read, report_write = os.pipe()
        parent = os.getpid()
        pid = os.fork()
        # pragma: the child runs this in the frame `ensure` began before the fork, which a
        # tracer set up again after the fork does not see (`child` is a new frame: it does).
        if pid == 0:  # pragma: no cover
            os.close(task_write)
            os.close(report_read)
            self.child(parent, Reader(task_read), report_write)
        os.close(task_read)
        os.close(report_write)
        self.pid, self.tasks, self.reports = pid, task_write, report_read
        self.reader = Reader(report_read)

    def child(self, parent: int, tasks: Reader, reports: int) -> NoReturn:
        """The forked child's whole life. A call of its own, not the rest of `ensure`: a
        tracer (coverage's, a profiler's) set up again after the fork sees a new frame."""
        os.setpgrp()  # Ctrl+C reaches the worker's group; the child finishes its job
        die_with_parent(parent)
        child_signals(self.stop)
        code = 1
        try:
            self.serve(tasks, reports)
            code = 0
        except RedisError as exc:
            # Redis went away mid-batch: the worker says so too, in its own one line.
            logger.error(f"the batch child lost Redis ({type(exc).__name__})")
        except BaseException:
            logger.exception("the batch child failed")
        finally:
            # Its spans and error reports still buffered: `os._exit` runs no exit handler.
            flush_reports()
            with contextlib.suppress(Exception):
                self.spans.shutdown()
            os._exit(code)

    def serve(self, tasks: Reader, reports: int) -> None:
        """The child: each batch is its job hashes and its span's context; run them,
        report, repeat."""
        while (batch := tasks.read_one()) is not None:
            hashes, batch_trace = batch
            # The worker read the same hashes when it took them.
            jobs = [read_job(job_id, fields, self.connection) for job_id, fields in hashes]
            run_batch(
                jobs,
                self.connection,
                self.settings,
                lambda r: send(reports, r),
                self.stop,
                spans=self.spans,
                batch_trace=batch_trace,
            )
            send(reports, Done())
            # Reset only now: a stop asked for before the batch was read applies to it.
            self.stop.requested = False

    def run(
        self,
        hashes: list[tuple[str, dict[bytes, bytes]]],
        report: Callable[[Started | Ended], None],
        idle: Callable[[], None],
        interval: float,
        before_wait: Callable[[], None],
        batch_trace: str = "",
    ) -> int:
        """Send a batch and take its reports until `Done`. Returns 0, or the child's exit
        status when it died mid-batch (it is then reaped, and replaced on the next batch).
        `before_wait` runs once the child has the batch, before its reports are awaited."""
        self.ensure()
        assert self.reader is not None
        try:
            send(self.tasks, (hashes, batch_trace))
        except BrokenPipeError:
            return self.reap()  # it died before reading the batch: no job started
        before_wait()
        # `idle` keeps the batch alive: due every `interval`, whether reports flow or not.
        due = time.monotonic() + interval
        while True:
            ready, _, _ = select.select([self.reports], [], [], max(due - time.monotonic(), 0))
            if time.monotonic() >= due:
                idle()
                due = time.monotonic() + interval
            if not ready:
                continue
            messages = self.reader.read()
            if messages is None:
                return self.reap()
            for message in messages:
                if isinstance(message, Done):
                    return 0
                report(message)

    def signal(self, signum: int) -> None:
        if self.pid:
            os.kill(self.pid, signum)

    def reap(self) -> int:
        _, status = os.waitpid(self.pid, 0)
        self.forget()
        return status or 1

    def forget(self) -> None:
        for fd in (self.tasks, self.reports):
            os.close(fd)
        self.pid, self.tasks, self.reports, self.reader = 0, -1, -1, None

    def close(self) -> None:
        """Let the child end after its current batch (its task pipe closes), and reap it."""
        if self.pid:
            os.close(self.tasks)
            self.tasks = os.open(os.devnull, os.O_WRONLY)
            self.reap()
