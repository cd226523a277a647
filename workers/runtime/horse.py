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

import os
import pickle
import select
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from redis import Redis
from rq.job import Job

from app.settings import Settings
from workers.runtime.runner import Ended, Started, StopAfterCurrent, child_signals, run_batch

_LENGTH = struct.Struct("!I")


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


class Horse:
    def __init__(self, connection: Redis, settings: Settings, stop: StopAfterCurrent) -> None:
        self.connection = connection
        self.settings = settings
        self.stop = stop
        self.pid = 0
        self.tasks = self.reports = -1
        self.reader: Reader | None = None

    def ensure(self) -> None:
        if self.pid:
            return
        task_read, task_write = os.pipe()
        report_read, report_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(task_write)
            os.close(report_read)
            os.setpgrp()  # Ctrl+C reaches the worker's group; the child finishes its job
            child_signals(self.stop)
            code = 1
            try:
                self.serve(Reader(task_read), report_write)
                code = 0
            finally:
                os._exit(code)
        os.close(task_read)
        os.close(report_write)
        self.pid, self.tasks, self.reports = pid, task_write, report_read
        self.reader = Reader(report_read)

    def serve(self, tasks: Reader, reports: int) -> None:
        """The child: each batch is a list of job hashes; run them, report, repeat."""
        while (hashes := tasks.read_one()) is not None:
            jobs = []
            for job_id, fields in hashes:
                job = Job(job_id, connection=self.connection)
                job.restore(fields)
                jobs.append(job)
            self.stop.requested = False
            run_batch(jobs, self.connection, self.settings, lambda r: send(reports, r), self.stop)
            send(reports, Done())

    def run(
        self,
        hashes: list[tuple[str, dict[bytes, bytes]]],
        report: Callable[[Started | Ended], None],
        idle: Callable[[], None],
        interval: float,
        before_wait: Callable[[], None],
    ) -> int:
        """Send a batch and take its reports until `Done`. Returns 0, or the child's exit
        status when it died mid-batch (it is then reaped, and replaced on the next batch).
        `before_wait` runs once the child has the batch, before its reports are awaited."""
        self.ensure()
        assert self.reader is not None
        send(self.tasks, hashes)
        before_wait()
        while True:
            ready, _, _ = select.select([self.reports], [], [], interval)
            if not ready:
                idle()
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
        for fd in (self.tasks, self.reports):
            os.close(fd)
        self.pid, self.tasks, self.reports, self.reader = 0, -1, -1, None
        return status or 1

    def close(self) -> None:
        """Let the child end after its current batch (its task pipe closes), and reap it."""
        if self.pid:
            os.close(self.tasks)
            self.tasks = os.open(os.devnull, os.O_WRONLY)
            self.reap()
