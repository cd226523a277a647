"""`webhooks config check`: every setting, its value (secrets masked) and where it came from,
then the checks every process makes at startup (those `make run` makes before it starts
anything, and the dashboard's login), with every problem listed.

It talks to no Redis (it is the command to run when nothing starts), but on a cluster, where
it reads the slot map from a seed node to say which primary holds which shards, when one
answers. Exit 0 when the checks pass, 1 when they do not.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import click
from pydantic import ValidationError
from redis.exceptions import RedisError

from app.cluster import SlotMap
from app.redis_errors import describe
from app.settings import Settings
from app.settings_checks import placeholder_variables, problems, validation_problems
from app.shards import Shards
from app.startup_checks import startup_problems
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


UNCONFIGURED = "(none: REDIS_URL is not set and `make run`'s stack is down)"
NO_REDIS = (
    "no Redis is configured: REDIS_URL is not set and the `make run` stack of this checkout "
    "is down; start it with `make run`, or set REDIS_URL=redis://HOST:PORT/DB"
)


@dataclass(frozen=True, slots=True)
class Report:
    target: Target
    settings: list[SettingLine]
    problems: list[str]
    shards: list[str] = field(default_factory=list)  # on a cluster: the shards' owners

    def as_dict(self) -> dict[str, object]:
        return {
            "ok": not self.problems,
            "redis": self.target.describe(),
            "settings": [
                {"name": s.name, "value": s.value, "from": str(s.origin)} for s in self.settings
            ],
            "problems": self.problems,
            "shards": self.shards,
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
    owners: list[str] = []
    try:
        settings = Settings(**target.overrides)
    except ValidationError as exc:
        found = validation_problems(exc)
        sources = _raw_sources(provenance)
    else:
        found = problems(settings) + _startup_problems(settings)
        sources = settings.webhook_sources
        owners = [] if found else shard_owners(settings)
    lines = setting_lines(provenance, sources)
    if target.down:
        # The default would be dialled by nothing: the command refuses it (`target.py`), and
        # a process started here is not the stack that was.
        lines = [
            SettingLine(s.name, UNCONFIGURED, s.origin) if s.name == "REDIS_URL" else s
            for s in lines
        ]
    return Report(target, lines, found, owners)


def shard_owners(settings: Settings) -> list[str]:
    """On a cluster, which primary holds which shards, as its slot map says now; or why
    that could not be read."""
    target = settings.cluster_target
    if target is None:
        return []
    shards = Shards(settings.webhook_shards)
    slot_map = SlotMap(target.seeds, target.node)
    try:
        slot_map.refresh()
        owners = [str(slot_map.lookup(shards.slot(shard))) for shard in shards]
    except RedisError as exc:
        return [f"shards: their owners not read ({describe(exc, target)})"]
    held = {owner: [n for n in shards if owners[n] == owner] for owner in dict.fromkeys(owners)}
    return [
        f"{'shard' if len(ids) == 1 else 'shards'} {spans(ids)} on {owner}"
        for owner, ids in held.items()
    ]


def spans(numbers: list[int]) -> str:
    """`0-3,7`: ascending numbers in runs."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and runs[-1][-1] == n - 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ",".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


def _startup_problems(settings: Settings) -> list[str]:
    """What stops the receiver, the worker or the dashboard at its own startup."""
    found = startup_problems(settings)
    if "RQ_DASHBOARD_PASSWORD" in placeholder_variables(settings):
        # The placeholder is already named; its length is not news.
        found = [p for p in found if not p.startswith("RQ_DASHBOARD_PASSWORD must be at least")]
    return found


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
    for line in report.shards:
        click.echo(line)
    if report.target.origin == "default":
        click.echo(f"note: {NO_STACK_HINT}")
    if not report.problems:
        if report.target.down:
            click.echo(f"ok: the checks every process makes at startup pass, but {NO_REDIS}")
        else:
            click.echo("ok: the checks every process makes at startup pass")
        return
    count = plural(len(report.problems), "problem")
    click.echo(f"{count} found by the checks every process makes at startup:", err=True)
    for problem in report.problems:
        click.echo(f"  {cell(problem)}", err=True)
