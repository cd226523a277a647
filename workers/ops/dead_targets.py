"""Which dead letters a `webhooks dead` command acts on (JOB_IDs, --all, or filters), and
how a bulk command reports the ids that were not dead letters.

A dead letter is named by its job id, by SOURCE/EVENT_ID or SOURCE EVENT_ID (as every
command that takes an event: `event_names.py`), or by its bare event id: logs, the Events
page and `events show` all lead with the event id, and the job id is a hash."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import click

from app.keys import job_id_for
from workers.ops.common import TIME, CommandError, cell, load_settings, plural, redis_connection
from workers.ops.deadletters import DeadLetter, DeadLetters, Selection
from workers.ops.event_names import source_first


def selection_options(func: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(
        [
            click.option("--source", help="Only this source."),
            click.option("--type", "type_", help="Only this event type."),
            click.option("--error", help="Only errors containing this text (any case)."),
            click.option(
                "--since", type=TIME, help="Dead-lettered at or after (ISO 8601 or unix)."
            ),
            click.option("--until", type=TIME, help="Dead-lettered at or before."),
        ]
    ):
        func = option(func)
    return func


def selection(
    source: str | None,
    type_: str | None,
    error: str | None,
    since: float | None,
    until: float | None,
) -> Selection:
    return Selection(source, type_, error, since, until)


@dataclass(frozen=True, slots=True)
class Targets:
    """The dead letters a bulk command acts on, and how they were chosen."""

    job_ids: list[str]
    named: bool  # given as JOB_ID arguments, not by --all or filters


@contextmanager
def selected(
    ids: tuple[str, ...], all_: bool, filters: Any
) -> Iterator[tuple[DeadLetters, Targets]]:
    """The dead-letter store and the letters chosen by JOB_IDs, --all, or filters."""
    chosen = selection(**filters)
    if sum([bool(ids), all_, not chosen.empty]) != 1:
        raise click.UsageError(
            "give IDs (job ids, SOURCE/EVENT_IDs, SOURCE EVENT_ID... or event ids), --all, "
            "or filters "
            "(--source, --type, --error, --since, --until): exactly one of them"
        )
    settings = load_settings()
    with redis_connection(settings) as connection:
        store = DeadLetters(settings, connection)
        check_source(store, chosen.source)
        if ids:
            yield store, Targets(resolve_all(store, ids), named=True)
        else:
            yield store, Targets([x.job_id for x in store.find(chosen)], named=False)


def check_source(store: DeadLetters, source: str | None) -> None:
    """A --source that is neither configured nor the source of any dead letter (of a source
    since removed) is a typo: said, not answered with `0 dead letters`."""
    if source is None or source in store.settings.sources:
        return
    if not any(letter.source == source for letter in store.find()):
        configured = ", ".join(store.settings.sources)
        raise CommandError(f"no source {source} (configured: {configured})")


def _candidates(store: DeadLetters, name: str) -> list[tuple[str, str]]:
    """(SOURCE/EVENT_ID, job id) of the dead letters `name` may mean as SOURCE/EVENT_ID or
    as a bare event id (an event id may hold `/`, so both readings are tried)."""
    source, slash, event_id = name.partition("/")
    readings = [(source, event_id)] if slash and source and event_id else []
    readings += [(configured, name) for configured in store.settings.sources]
    found = {
        f"{source}/{event_id}": job_id
        for source, event_id in readings
        if (job_id := job_id_for(source, event_id)) in store.registry
    }
    if not found:  # a source no longer configured: its letters' own ids, one pass
        found = {
            f"{letter.source}/{letter.event_id}": letter.job_id
            for letter in store.find()
            if name in (letter.event_id, f"{letter.source}/{letter.event_id}")
        }
    return sorted(found.items())


def resolve_all(store: DeadLetters, names: tuple[str, ...]) -> list[str]:
    """The job ids the arguments name: `SOURCE EVENT_ID...` (the events of one source), or
    each one a job id, SOURCE/EVENT_ID or an event id; a name that names no dead letter is
    kept as it is (SOURCE/EVENT_ID for the first form), for the caller to report."""
    events = source_first(names, list(store.settings.sources))
    if events is None:
        return [resolve(store, name) for name in names]
    return [exact(store, source, event_id) for source, event_id in events]


def exact(store: DeadLetters, source: str, event_id: str) -> str:
    """The job id of this event's dead letter, or SOURCE/EVENT_ID when it has none."""
    job_id = job_id_for(source, event_id)
    return job_id if job_id in store.registry else f"{source}/{event_id}"


def resolve(store: DeadLetters, name: str) -> str:
    """The job id of the dead letter `name` names (a job id, SOURCE/EVENT_ID or an event
    id); `name` itself when it names none, for the caller to report. Several matches are an
    error that lists them: acting on one of them would be a guess."""
    if name in store.registry:
        return name
    found = _candidates(store, name)
    if len(found) > 1:
        matches = ", ".join(f"{named} (job {job_id})" for named, job_id in found)
        raise CommandError(
            f"{name} is the event id of {len(found)} dead letters: {matches}; "
            "give SOURCE/EVENT_ID or the job id"
        )
    return found[0][1] if found else name


def targeted(store: DeadLetters, targets: Targets) -> list[DeadLetter]:
    """The targets that are dead letters, as a dry run lists them."""
    wanted = set(targets.job_ids)
    return [letter for letter in store.find() if letter.job_id in wanted]


def report_missing(targets: Targets, found: set[str]) -> None:
    """Named ids that are not dead letters: said on stderr, and the exit status is 1."""
    missing = [job_id for job_id in targets.job_ids if job_id not in found]
    if missing:
        click.echo(f"not dead letters (skipped): {cell(' '.join(missing))}", err=True)
        sys.exit(1)


def apply_each(action: Callable[[str], bool], targets: Targets, did: str, as_json: bool) -> None:
    """Act on each target; count and name those that were not dead letters, or no longer
    (requeued or purged since they were listed), and exit 1 after the rest."""
    done = {job_id for job_id in targets.job_ids if action(job_id)}
    missing = [job_id for job_id in targets.job_ids if job_id not in done]
    if as_json:
        click.echo(json.dumps({did: len(done), "not_dead_letters": missing}))
    else:
        # Skipped: not a dead letter when named, or no longer one (requeued meanwhile).
        skipped = f", {len(missing)} skipped" if missing else ""
        click.echo(f"{did} {plural(len(done), 'dead letter')}{skipped}")
    report_missing(targets, done)
