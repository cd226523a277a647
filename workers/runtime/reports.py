"""Handler errors reported to Sentry: off unless SENTRY_DSN is set, and free when off.

sentry-sdk's own `RqIntegration` hooks RQ's `perform_job`, which the batched worker never
calls (in either mode), and would report a job's last failure only. Here the worker
reports each failing handler itself, from `deliver`, where its exception and traceback
are still at hand: every failed attempt (WEBHOOK_SENTRY_EVENTS=attempt), or only the
failure after which the handler does not run again for the event (final, the default).
What is sent, and what never is: `workers/runtime/sentry_reports.py`.

Off, nothing of sentry-sdk is imported and `reporting` holds None: one lookup per failed
attempt. On, `run_worker` sets it once for the process; the fork mode's child inherits
it with the rest of the process (the SDK starts no thread before it sends, and starts its
own in a forked child), and flushes it before its `os._exit`.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import TYPE_CHECKING, Protocol

from app.settings import ConfigError, Settings
from app.startup_checks import sentry_problems

if TYPE_CHECKING:
    from workers.event import Event
    from workers.runtime.attempt import HandlerRun


class HandlerErrors(Protocol):
    def attempt_failed(self, event: Event, runs: list[HandlerRun], dead: bool) -> None:
        """An attempt ended with a failure: `runs` are its handlers' turns, `dead` says
        whether the event is dead-lettered after it (no retry left, or a permanent end)."""
        ...

    def flush(self) -> None:
        """Send what is still queued (a process or a forked child about to end)."""
        ...


# The process's reporter; None when SENTRY_DSN is unset.
reporting: ContextVar[HandlerErrors | None] = ContextVar("webhook_reporting", default=None)


def worker_reports(settings: Settings) -> HandlerErrors | None:
    """The reporter SENTRY_DSN asks for, the SDK set up; None when it is unset."""
    if settings.sentry_dsn is None:
        return None
    found = sentry_problems(settings)  # checked at the worker's start; here for a test's
    if found:
        raise ConfigError("; ".join(found))
    from workers.runtime import sentry_reports

    return sentry_reports.start(settings)


def flush_reports() -> None:
    """Send what the process's reporter still holds; never raises (a process is ending)."""
    reporter = reporting.get()
    if reporter is not None:
        with contextlib.suppress(Exception):
            reporter.flush()
