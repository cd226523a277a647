"""What each process checks at startup, past the settings' own checks: one list, run by the
processes before they start anything and by `webhooks config check`, so the two cannot
differ (`tests/test_startup_parity.py` runs one table of cases through both).

`Settings.load` already refuses what no process can run with (`settings_checks.py`). Here
are the checks that depend on which process starts: only the receiver and the worker trace,
only the worker reports to Sentry, only the dashboard has a login. A check that needs an
optional extra imports what the process would import: a check that looked for a package
by name would pass beside a package too broken to import.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from app.settings import Settings
from app.sources import ConfigError
from app.tracing import tracing_problems

# The dashboard's login is the only thing between the network and requeue/delete; the login
# brake slows each client (an address, an IPv6 /64), and against a guesser with many, only
# the password's length does.
MIN_PASSWORD_LENGTH = 16


class Process(StrEnum):
    """The Procfile's long-running processes."""

    RECEIVER = "web"
    WORKER = "worker"
    DASHBOARD = "dashboard"


def otel_problems(settings: Settings) -> list[str]:
    return tracing_problems(settings.otel)


def sentry_problems(settings: Settings) -> list[str]:
    if settings.sentry_dsn is None:
        return []
    try:
        import sentry_sdk  # noqa: F401 - importing is the check
    except ImportError as exc:
        return [
            "SENTRY_DSN is set, but sentry-sdk is not installed: "
            f"pip install 'rq-webhook-receiver[sentry]' ({exc.name} is missing)"
        ]
    return []


def login_problems(settings: Settings) -> list[str]:
    username = settings.rq_dashboard_username or ""
    secret = settings.rq_dashboard_password
    password = secret.get_secret_value() if secret is not None else ""
    if not username or not password:
        return [
            "RQ_DASHBOARD_USERNAME and RQ_DASHBOARD_PASSWORD must be set: the dashboard "
            "can requeue and delete events, so it never runs without a login"
        ]
    if len(password) < MIN_PASSWORD_LENGTH:
        return [
            f"RQ_DASHBOARD_PASSWORD must be at least {MIN_PASSWORD_LENGTH} characters "
            "(e.g. `openssl rand -base64 24`): the dashboard can requeue and delete events"
        ]
    return []


@dataclass(frozen=True, slots=True)
class Check:
    """One startup check: what it finds wrong (one line each), and who runs it."""

    run: Callable[[Settings], list[str]]
    processes: frozenset[Process]


CHECKS = (
    Check(otel_problems, frozenset({Process.RECEIVER, Process.WORKER})),
    Check(sentry_problems, frozenset({Process.WORKER})),
    Check(login_problems, frozenset({Process.DASHBOARD})),
)


def startup_problems(settings: Settings, *processes: Process) -> list[str]:
    """What stops any of `processes` (all of them when none is named), each said once."""
    wanted = set(processes or Process)
    found = [p for check in CHECKS if check.processes & wanted for p in check.run(settings)]
    return list(dict.fromkeys(found))


def check_startup(settings: Settings, process: Process) -> None:
    """Raise what stops `process`, every problem in one `ConfigError`."""
    found = startup_problems(settings, process)
    if found:
        raise ConfigError("; ".join(found))
