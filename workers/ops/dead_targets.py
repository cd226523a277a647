"""Which dead letters a `webhooks dead` command acts on (JOB_IDs, --all, or filters), and
how a bulk command reports the ids that were not dead letters.

A dead letter is named by its job id, by SOURCE/EVENT_ID or SOURCE EVENT_ID (as every
command that takes an event: `event_names.py`), or by its bare event id: logs, the Events
page and `events show` all lead with the event id, and the job id is a hash.

On a cluster the letters are in every shard's registry (`shard_fanout.py`): a name is looked
up in each, each shard acts on its own letters in one go, and a shard that does not answer is
named on stderr (the exit status is then 1) while the others' letters are listed and acted on."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import click
from redis import Redis
from redis.exceptions import RedisError

from app.keys import job_id_for
from app.redis_errors import describe
from app.settings import Settings
from workers.ops.common import TIME, CommandError, cell, every_shard, load_settings, plural
from workers.ops.dead_letter import DeadLetter, Selection
from workers.ops.event_names import source_first
from workers.ops.shard_fanout import Fanout

if TYPE_CHECKING:  # rq is imported by each shard's process, not before (`shard_fanout.py`)
    from workers.ops.deadletters import DeadLetters


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


Shard = int | None  # None: the one Redis


@dataclass(frozen=True, slots=True)
class Targets:
    """The dead letters a bulk command acts on, and how they were chosen."""

    job_ids: list[str]
    named: bool  # given as JOB_ID arguments, not by --all or filters
    # The shard of each that was found; the others are not dead letters.
    shards: dict[str, Shard] = field(default_factory=dict)

    def on(self, shard: Shard) -> list[str]:
        found = self.shards
        return [job_id for job_id in self.job_ids if job_id in found and found[job_id] == shard]


Action = Callable[["DeadLetters", str], bool]


class AllDead:
    """The dead letters of every shard (on one Redis, of its one registry). A shard that
    fails is said on stderr and its letters left out (`Fanout.answered`)."""

    def __init__(self, fanout: Fanout) -> None:
        self.fanout = fanout
        self.settings = fanout.settings

    @property
    def failed(self) -> bool:
        return self.fanout.failed

    def _run(
        self, work: Callable[[DeadLetters], Any], shards: list[int] | None = None
    ) -> list[tuple[Shard, Any]]:
        """(shard, what `work` returned there) of each shard that answered."""

        def on_shard(settings: Settings, connection: Redis) -> Any:
            from workers.ops.deadletters import DeadLetters

            return work(DeadLetters(settings, connection))

        return self.fanout.answered(on_shard, shards)

    def found(self, chosen: Selection | None = None) -> list[tuple[Shard, DeadLetter]]:
        """Every dead letter (of the selection) with its shard; over several shards, by the
        time each failed, the oldest first, as one registry lists them."""
        pairs = [
            (shard, letter)
            for shard, letters in self._run(lambda store: store.find(chosen))
            for letter in letters
        ]
        if self.fanout.connection is None:
            pairs.sort(key=lambda pair: (pair[1].failed_ts is None, pair[1].failed_ts or 0.0))
        return pairs

    def find(self, chosen: Selection | None = None) -> list[DeadLetter]:
        return [letter for _, letter in self.found(chosen)]

    def lookup(self, names: list[str], exact_ids: bool) -> dict[str, list[tuple[Shard, str, str]]]:
        """For each name, the dead letters it may mean: (shard, SOURCE/EVENT_ID or the name,
        job id). A job id (or, with `exact_ids`, only that) matches itself; else the name is
        read as SOURCE/EVENT_ID and as a bare event id of each source."""

        def in_shard(store: DeadLetters) -> dict[str, list[tuple[str, str]]]:
            return {name: _candidates(store, name, exact_ids) for name in names}

        found: dict[str, list[tuple[Shard, str, str]]] = {name: [] for name in names}
        for shard, answer in self._run(in_shard):
            for name, candidates in answer.items():
                found[name] += [(shard, named, job_id) for named, job_id in candidates]
        return found

    def act(self, action: Action, targets: Targets) -> set[str]:
        """The targets `action` did (each shard's in one go, in its own process)."""

        def in_shard(store: DeadLetters) -> tuple[list[str], str | None]:
            done: list[str] = []
            try:
                for job_id in targets.on(store.settings.shard):
                    if action(store, job_id):
                        done.append(job_id)
            except RedisError as exc:
                if store.settings.cluster_target is None:
                    raise  # one Redis: said as every command says it (`redis_connection`)
                # What was done before the shard failed is reported as done.
                return done, describe(exc, store.settings.cluster_target)
            return done, None

        shards = sorted({s for s in targets.shards.values() if s is not None})
        acted: set[str] = set()
        for shard, (done, failure) in self._run(in_shard, shards):
            acted.update(done)
            if failure is not None:
                click.echo(cell(f"shard {shard}: {failure} (after {len(done)} done)"), err=True)
                self.fanout.failed = True
        return acted

    def show(self, job_id: str, shard: Shard) -> dict[str, Any] | None:
        answers = self._run(lambda store: store.show(job_id), None if shard is None else [shard])
        return cast(dict[str, Any] | None, answers[0][1]) if answers else None


@contextmanager
def every_dead() -> Iterator[AllDead]:
    """The dead letters of the settings' Redis or cluster."""
    with every_shard(load_settings()) as fanout:
        yield AllDead(fanout)


@contextmanager
def selected(ids: tuple[str, ...], all_: bool, filters: Any) -> Iterator[tuple[AllDead, Targets]]:
    """The dead letters and those chosen by JOB_IDs, --all, or filters."""
    chosen = selection(**filters)
    if sum([bool(ids), all_, not chosen.empty]) != 1:
        raise click.UsageError(
            "give IDs (job ids, SOURCE/EVENT_IDs, SOURCE EVENT_ID... or event ids), --all, "
            "or filters "
            "(--source, --type, --error, --since, --until): exactly one of them"
        )
    with every_dead() as dead:
        check_source(dead, chosen.source)
        if ids:
            yield dead, resolve_all(dead, ids)
        else:
            found = dead.found(chosen)
            yield (
                dead,
                Targets([x.job_id for _, x in found], False, {x.job_id: s for s, x in found}),
            )


def check_source(dead: AllDead, source: str | None) -> None:
    """A --source that is neither configured nor the source of any dead letter (of a source
    since removed) is a typo: said, not answered with `0 dead letters`."""
    if source is None or source in dead.settings.sources:
        return
    if not any(letter.source == source for letter in dead.find()):
        configured = ", ".join(dead.settings.sources)
        raise CommandError(f"no source {source} (configured: {configured})")


def _candidates(store: DeadLetters, name: str, exact_ids: bool) -> list[tuple[str, str]]:
    """(SOURCE/EVENT_ID or the job id, job id) of the dead letters of one registry `name`
    may mean: its job id; else as SOURCE/EVENT_ID or as a bare event id (an event id may
    hold `/`, so both readings are tried)."""
    if name in store.registry:
        return [(name, name)]
    if exact_ids:
        return []
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


def resolve_all(dead: AllDead, names: tuple[str, ...]) -> Targets:
    """The dead letters the arguments name: `SOURCE EVENT_ID...` (the events of one
    source), or each one a job id, SOURCE/EVENT_ID or an event id; a name that names none
    is kept as it is (SOURCE/EVENT_ID for the first form), for the caller to report."""
    events = source_first(names, list(dead.settings.sources))
    if events is not None:
        return resolve_events(dead, events)
    found = dead.lookup(list(names), exact_ids=False)
    chosen = [_one(name, found[name]) for name in names]
    shards = {job_id: where[0] for job_id, where in chosen if where}
    return Targets([job_id for job_id, _ in chosen], True, shards)


def resolve_events(dead: AllDead, events: list[tuple[str, str]]) -> Targets:
    """The dead letters of these (source, event id)s; SOURCE/EVENT_ID for one that has none."""
    ids = [(job_id_for(source, event_id), f"{source}/{event_id}") for source, event_id in events]
    found = dead.lookup(list(dict.fromkeys(job_id for job_id, _ in ids)), exact_ids=True)
    job_ids = [job_id if found[job_id] else named for job_id, named in ids]
    return Targets(job_ids, True, {job_id: hits[0][0] for job_id, hits in found.items() if hits})


def _one(name: str, hits: list[tuple[Shard, str, str]]) -> tuple[str, list[Shard]]:
    """The job id `name` names and its shard, or `name` and none when it names none (the
    caller reports it). Several matches are an error that
    lists them: acting on one of them would be a guess."""
    direct = [hit for hit in hits if hit[2] == name]
    if direct:
        return name, [direct[0][0]]
    if len(hits) > 1:
        listed = sorted(hits, key=lambda hit: (hit[1], hit[2]))
        matches = ", ".join(f"{named} (job {job_id})" for _, named, job_id in listed)
        raise CommandError(
            f"{name} is the event id of {len(hits)} dead letters: {matches}; "
            "give SOURCE/EVENT_ID or the job id"
        )
    return (hits[0][2], [hits[0][0]]) if hits else (name, [])


def targeted(dead: AllDead, targets: Targets) -> list[DeadLetter]:
    """The targets that are dead letters, as a dry run lists them."""
    wanted = set(targets.shards)
    return [letter for letter in dead.find() if letter.job_id in wanted]


def report_missing(targets: Targets, found: set[str]) -> None:
    """Named ids that are not dead letters: said on stderr, and the exit status is 1."""
    missing = [job_id for job_id in targets.job_ids if job_id not in found]
    if missing:
        click.echo(f"not dead letters (skipped): {cell(' '.join(missing))}", err=True)
        sys.exit(1)


def apply_each(dead: AllDead, action: Action, targets: Targets, did: str, as_json: bool) -> None:
    """Act on each target; count and name those that were not dead letters, or no longer
    (requeued or purged since they were listed), and exit 1 after the rest."""
    done = dead.act(action, targets)
    missing = [job_id for job_id in targets.job_ids if job_id not in done]
    if as_json:
        click.echo(json.dumps({did: len(done), "not_dead_letters": missing}))
    else:
        # Skipped: not a dead letter when named, or no longer one (requeued meanwhile).
        skipped = f", {len(missing)} skipped" if missing else ""
        click.echo(f"{did} {plural(len(done), 'dead letter')}{skipped}")
    report_missing(targets, done)
