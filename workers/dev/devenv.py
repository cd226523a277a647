"""What `make run` adds to the environment when the user has not configured it: credentials,
retry intervals short enough to see a dead letter, the example handlers, readable logs."""

from __future__ import annotations

import secrets
import shlex
from collections.abc import Callable
from dataclasses import dataclass

import click
from dotenv import dotenv_values

from workers.dev.devsecrets import configured_sources, source_secret_makers
from workers.dev.private import write_private
from workers.dev.stackfile import DEV_ENV, configured

# Seconds between attempts under `make run`: with the default 5 retries a failing event is a
# dead letter in about 40 s, not after the production intervals' 43 minutes.
DEV_RETRY_INTERVALS = "1,2,5,10,20"
DEFAULT_MAX_RETRIES = 5
# The example handlers, by the source each is for: only those of configured sources are
# loaded, as a handler for a source that is not configured makes the worker warn.
EXAMPLE_HANDLERS = {"inbound": "examples.handlers", "stripe": "examples.stripe_handlers"}


def dev_credentials() -> dict[str, str]:
    """Secrets for a local run, made once and kept in var/dev.env (never printed): the
    default source's, the dashboard's login, and every configured source's that has none."""
    wanted: dict[str, Callable[[], str]] = {
        "WEBHOOK_SIGNING_SECRET": lambda: secrets.token_hex(24),
        "RQ_DASHBOARD_USERNAME": lambda: "admin",
        "RQ_DASHBOARD_PASSWORD": lambda: secrets.token_urlsafe(18),
        # Every other configured source's secret, so `webhooks send` works for each.
        **source_secret_makers(configured_sources()),
    }
    stored = {k: v for k, v in dotenv_values(DEV_ENV).items() if v} if DEV_ENV.is_file() else {}
    made = {}
    for name, make in wanted.items():
        if configured(name) or (
            name == "WEBHOOK_SIGNING_SECRET" and configured("WEBHOOK_SECRET_INBOUND")
        ):
            continue
        made[name] = stored.get(name) or make()
    if made:  # 600 from its creation, in a 700 var/ (`private.py`)
        write_private(DEV_ENV, "".join(f"{k}={shlex.quote(v)}\n" for k, v in made.items()))
    return made


@dataclass(frozen=True, slots=True)
class DevSettings:
    """Settings `make run` gives its processes because the user left them unset."""

    values: dict[str, str]

    @property
    def short_retries(self) -> bool:
        return "WEBHOOK_RETRY_INTERVALS" in self.values


def dev_settings(terminal: bool) -> DevSettings:
    values = {}
    if not configured("WEBHOOK_RETRY_INTERVALS"):
        values["WEBHOOK_RETRY_INTERVALS"] = DEV_RETRY_INTERVALS
    if not configured("WEBHOOK_HANDLERS"):
        names = {name for name, _ in configured_sources()}
        examples = [module for source, module in EXAMPLE_HANDLERS.items() if source in names]
        if examples:
            values["WEBHOOK_HANDLERS"] = ",".join(examples)
    # The processes write to honcho's pipe, not a terminal: their `auto` would pick JSON.
    if terminal and not configured("WEBHOOK_LOG_FORMAT"):
        values["WEBHOOK_LOG_FORMAT"] = "text"
    return DevSettings(values)


def dead_letter_after(intervals: list[int]) -> float:
    """Seconds from a first failure to the dead letter: every retry's wait."""
    return float(sum(intervals))


def retries_line(intervals: list[int], dev: DevSettings) -> str:
    if not intervals:
        return "retries:   none (WEBHOOK_MAX_RETRIES=0): a failing event is a dead letter at once"
    waits = ", ".join(str(i) for i in intervals) or "none"
    origin = (
        "development intervals, as WEBHOOK_RETRY_INTERVALS is not set"
        if dev.short_retries
        else "WEBHOOK_RETRY_INTERVALS"
    )
    total = dead_letter_after(intervals)
    when = f"about {round(total)} s" if total < 120 else f"about {round(total / 60)} min"
    return (
        f"retries:   after {waits} s ({origin}):\n"
        f'           an event of type "demo.flaky" is a dead letter in {when}'
    )


def echo_banner(lines: list[str]) -> None:
    for line in lines:
        click.echo(line)
