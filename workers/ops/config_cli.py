"""`webhooks config check`: every setting, its value (secrets masked) and where it came from,
then the checks every process makes at startup (those `make run` makes before it starts
anything, and the dashboard's login), with every problem listed.

It talks to no Redis: it is the command to run when nothing starts. Exit 0 when the checks
pass, 1 when they do not.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import click
from pydantic import ValidationError

from app.settings import ConfigError, Settings
from app.settings_checks import placeholder_variables, problems, validation_problems
from workers.ops.common import cell, json_option, plural, print_table
from workers.ops.config_sources import Provenance, SettingLine, setting_lines
from workers.ops.target import Target, resolve_target

# Without a stack, unset secrets are problems here, as they would be for a worker started
# by hand; `make run` would make development ones instead.
NO_STACK_HINT = (
    "no `make run` stack of this checkout is up and REDIS_URL is not set: these are the "
    "settings a process started here would get (`make run` adds development secrets and "
    "values for what is unset)"
)


@dataclass(frozen=True, slots=True)
class Report:
    target: Target
    settings: list[SettingLine]
    problems: list[str]

    def as_dict(self) -> dict[str, object]:
        return {
            "ok": not self.problems,
            "redis": self.target.describe(),
            "settings": [
                {"name": s.name, "value": s.value, "from": str(s.origin)} for s in self.settings
            ],
            "problems": self.problems,
        }


@click.group()
def config() -> None:
    """What is configured, and whether it can run."""


@config.command()
@json_option("One JSON object: ok, redis, settings (name, value, from), problems.")
def check(as_json: bool) -> None:
    """Every setting, where it came from (secrets masked), and every problem."""
    report = build_report(resolve_target())
    if as_json:
        click.echo(json.dumps(report.as_dict()))
    else:
        _print(report)
    if report.problems:
        raise SystemExit(1)


def build_report(target: Target) -> Report:
    provenance = Provenance.read(target)
    try:
        settings = Settings(**target.overrides)
    except ValidationError as exc:
        found = validation_problems(exc)
        sources = _raw_sources(provenance)
    else:
        found = problems(settings) + _dashboard_problems(settings)
        sources = settings.webhook_sources
    return Report(target, setting_lines(provenance, sources), found)


def _dashboard_problems(settings: Settings) -> list[str]:
    """What stops the dashboard at its own startup: a missing or short login."""
    from workers.ops.dashboard import check_login  # Flask and rq-dashboard: only here

    try:
        check_login(settings)
    except ConfigError as exc:
        # A placeholder is already named above; its length is not news.
        placeholder = "RQ_DASHBOARD_PASSWORD" in placeholder_variables(settings)
        if placeholder and str(exc).startswith("RQ_DASHBOARD_PASSWORD must be at least"):
            return []
        return [str(exc)]
    return []


def _raw_sources(provenance: Provenance) -> list[str]:
    found = provenance.find("WEBHOOK_SOURCES")
    text = found[0] if found is not None else "inbound:hmac"
    return [part.strip() for part in text.split(",") if part.strip()]


def _print(report: Report) -> None:
    print_table(
        ("SETTING", "FROM", "VALUE"),
        [(s.name, s.origin, s.value) for s in report.settings],
    )
    click.echo(f"redis: {report.target.describe()}")
    if report.target.origin == "default":
        click.echo(f"note: {NO_STACK_HINT}")
    if not report.problems:
        click.echo("ok: the checks every process makes at startup pass")
        return
    count = plural(len(report.problems), "problem")
    click.echo(f"{count} found by the checks every process makes at startup:", err=True)
    for problem in report.problems:
        click.echo(f"  {cell(problem)}", err=True)
