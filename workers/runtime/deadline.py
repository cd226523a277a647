"""A batch's jobs' timeouts, as RQ's `UnixSignalDeathPenalty` sets one per job."""

from __future__ import annotations

import signal
import time
from types import FrameType
from typing import Any

from rq.timeouts import JobTimeoutException


class Deadline:
    """RQ's `UnixSignalDeathPenalty` for a batch: a job still running when its timeout
    passes gets `JobTimeoutException` (in whichever handler runs), worded as RQ words it.

    RQ sets and clears the SIGALRM signal handler around every job, and `signal.signal`
    costs more than a no-op handler: here it is set once per batch, and set again only if
    a webhook handler replaced it. The timer is set and cleared for every job, as RQ does,
    so a webhook handler that uses the timer itself cannot leave the jobs after it without
    a deadline. An alarm that is not ours (a webhook handler's) is set again for the job's
    deadline."""

    def __init__(self) -> None:
        self.timeout: float = 0
        self.deadline: float | None = None  # the running job's; None between jobs
        self.handler = self.expired
        self.previous: Any = None

    def __enter__(self) -> Deadline:
        self.previous = signal.signal(signal.SIGALRM, self.handler)
        return self

    def __exit__(self, *exc: object) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.previous or signal.SIG_DFL)

    def start(self, timeout: float) -> None:
        if signal.getsignal(signal.SIGALRM) is not self.handler:
            signal.signal(signal.SIGALRM, self.handler)
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        signal.setitimer(signal.ITIMER_REAL, timeout)

    def cancel(self) -> None:
        # First: an alarm that goes off now finds no job running, and raises nothing.
        self.deadline = None
        signal.setitimer(signal.ITIMER_REAL, 0)

    def expired(self, signum: int, frame: FrameType | None) -> None:
        if self.deadline is None:
            return  # between jobs
        left = self.deadline - time.monotonic()
        if left > 0:
            signal.setitimer(signal.ITIMER_REAL, left)
            return
        self.deadline = None
        raise JobTimeoutException(f"Task exceeded maximum timeout value ({self.timeout} seconds)")
