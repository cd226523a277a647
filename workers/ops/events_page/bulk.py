"""Requeue or purge every dead letter a search of the Events page matches.

The page's search filters on receipt time (the ledger's), where `webhooks dead`'s
`--since/--until` are on failure time: a bulk action takes the events the search matches
that are dead letters, so it reads the failed registry (each job's meta holds its source,
event id, type and receipt time) and applies the search's filters to it. The registry is
the set scanned, newest failures first and at most SCANNED of them, not the ledger.

A confirmation lists the job ids it showed; the action takes exactly those that are still
dead letters matching the search: one that failed after the confirmation is not touched,
one requeued or purged meanwhile is counted as skipped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import cast

from redis import Redis
from rq.serializers import resolve_serializer

from app.jobstate import EventStatus, JobMeta
from app.keys import Keys
from workers.ops.deadletters import DeadLetters
from workers.ops.events_page.moments import Moment, moment
from workers.ops.events_page.search import Query

SCANNED = 10_000  # dead letters read per request, newest failures first
AT_ONCE = 1_000  # dead letters one confirmation lists, and one action takes
CHUNK = 1_000
# A job id as RQ accepts it: what a confirmation's list of jobs is read as.
JOB_ID = re.compile(r"[A-Za-z0-9_-]{1,200}")
_SERIALIZER = resolve_serializer(None)  # RQ's default, as the workers write job meta


class Verb(StrEnum):
    REQUEUE = "requeue"
    PURGE = "purge"

    @property
    def past(self) -> str:
        return f"{self.value}d"


@dataclass(frozen=True, slots=True)
class Filters:
    """The search's filters, as its results table applies them (receipt time)."""

    source: str | None = None
    event_id: str | None = None
    type: str | None = None
    since: float | None = None
    until: float | None = None
    # The events of one bulk requeue (source, event id), when the search asks for them.
    within: frozenset[tuple[str, str]] | None = None

    @classmethod
    def of(cls, query: Query, within: frozenset[tuple[str, str]] | None = None) -> Filters | None:
        """None when the search's status leaves dead letters out. `within`: the events of
        the bulk requeue the search names (`query.requeued`)."""
        if query.status not in (None, EventStatus.DEAD):
            return None
        return cls(query.source, query.event_id, query.type, query.since, query.until, within)

    def matches(self, meta: JobMeta) -> bool:
        return (
            (self.source is None or meta.source == self.source)
            and (self.event_id is None or meta.event_id == self.event_id)
            # The search's own type rule: exact, or a prefix when it ends in `*`.
            and Query(type=self.type).matches("", meta.type)
            and (self.since is None or meta.received_at >= self.since)
            and (self.until is None or meta.received_at <= self.until)
            and (self.within is None or (meta.source, meta.event_id) in self.within)
        )


@dataclass(frozen=True, slots=True)
class Letter:
    job_id: str
    meta: JobMeta


@dataclass(frozen=True, slots=True)
class Found:
    letters: list[Letter]  # those the search matches, newest failures first
    scanned: int
    total: int  # dead letters in the registry

    @property
    def partial(self) -> bool:
        return self.scanned < self.total


def read(connection: Redis, keys: Keys, job_ids: list[str]) -> list[Letter]:
    """The letters of these jobs whose meta is an event's (anything else on the queue is
    not an event the search can match), in the order given; only the meta field is read.
    `keys`: RQ's key names of the shard (on a cluster) whose jobs they are."""
    letters: list[Letter] = []
    for start in range(0, len(job_ids), CHUNK):
        part = job_ids[start : start + CHUNK]
        with connection.pipeline(transaction=False) as pipe:
            for job_id in part:
                pipe.hget(keys.job(job_id), "meta")
            replies = cast(list[bytes | None], pipe.execute())
        for job_id, raw in zip(part, replies, strict=True):
            meta = _meta(raw) if raw is not None else None
            if meta is not None:
                letters.append(Letter(job_id, meta))
    return letters


def _meta(raw: bytes) -> JobMeta | None:
    try:
        return JobMeta.from_meta(_SERIALIZER.loads(raw))
    except Exception:  # damaged, or not an event's job: not a search result
        return None


def find(connection: Redis, keys: Keys, filters: Filters, scanned: int = SCANNED) -> Found:
    """The dead letters of one Redis (or shard: `keys` are its) that the search matches,
    among the `scanned` that failed most recently."""
    total = int(connection.zcard(keys.failed))
    # Scored by when each expires, which is when it failed plus one TTL: newest last.
    newest = cast(list[bytes], connection.zrevrange(keys.failed, 0, scanned - 1))
    ids = [i.decode() for i in newest]
    letters = [x for x in read(connection, keys, ids) if filters.matches(x.meta)]
    return Found(letters, len(ids), total)


@dataclass(frozen=True, slots=True)
class Group:
    """The dead letters of one error, as `webhooks dead list --group-by error` counts them."""

    error: str
    count: int
    sources: list[str]
    types: list[str]
    first_failed: Moment | None
    last_failed: Moment | None


def groups(letters: list[Letter], now: float) -> list[Group]:
    by_error: dict[str, list[JobMeta]] = {}
    for letter in letters:
        by_error.setdefault(letter.meta.last_error, []).append(letter.meta)
    found = []
    for error, metas in sorted(by_error.items(), key=lambda kv: -len(kv[1])):
        failed = [m.dead_at for m in metas if m.dead_at is not None]
        found.append(
            Group(
                error,
                len(metas),
                sorted({m.source for m in metas}),
                sorted({m.type for m in metas}),
                moment(min(failed), now) if failed else None,
                moment(max(failed), now) if failed else None,
            )
        )
    return found


@dataclass(frozen=True, slots=True)
class BulkResult:
    """What one bulk action did (not `app.jobstate.Outcome`, what a worker did)."""

    verb: Verb
    done: int = 0
    gone: int = 0  # no longer a dead letter (requeued, purged or expired meanwhile)
    unmatched: int = 0  # still dead, but no longer one the search matches
    # The letters acted on, for the result's link to them (`requeued.py`).
    acted: tuple[Letter, ...] = field(default=(), compare=False)

    @property
    def skipped(self) -> int:
        return self.gone + self.unmatched

    @classmethod
    def said(cls, args: Mapping[str, str]) -> BulkResult | None:
        """The result a page was redirected with (bulk, done, gone, unmatched); None
        unless each is what an action writes: a verb and counts, nothing else shown."""
        try:
            verb = Verb(args.get("bulk", ""))
            done, gone, unmatched = (int(args.get(n, "0")) for n in ("done", "gone", "unmatched"))
        except ValueError:
            return None
        if min(done, gone, unmatched) < 0:
            return None
        return cls(verb, done, gone, unmatched)

    def sentence(self) -> str:
        """Fixed words around counts: nothing a sender or the form wrote."""
        parts = [f"{self.done} {self.verb.past}"]
        if self.gone:
            parts.append(f"{self.gone} skipped: no longer a dead letter")
        if self.unmatched:
            parts.append(f"{self.unmatched} skipped: no longer matching the search")
        return ", ".join(parts) + "."


def selected(
    query: Query, errors: list[str], within: frozenset[tuple[str, str]] | None
) -> Filters | None:
    """The dead letters a bulk action on this search takes; None, and a sentence in
    `errors`, when its status leaves them out."""
    filters = Filters.of(query, within)
    if filters is None and not errors:
        errors.append("This search's status leaves dead letters out.")
    return filters


def apply(
    store: DeadLetters, verb: Verb, filters: Filters, job_ids: list[str], all_handlers: bool
) -> BulkResult:
    """Act on each listed job that is still a dead letter the search matches."""
    letters = {x.job_id: x for x in read(store.connection, store.settings.keys, job_ids)}
    done = gone = unmatched = 0
    acted: list[Letter] = []
    for job_id in job_ids:
        letter = letters.get(job_id)
        if letter is None or job_id not in store.registry:
            gone += 1
        elif not filters.matches(letter.meta):
            unmatched += 1
        else:
            if verb is Verb.REQUEUE:
                ok = store.requeue(job_id, by="dashboard", all_handlers=all_handlers)
            else:
                ok = store.purge(job_id)
            done, gone = done + ok, gone + (not ok)
            if ok:
                acted.append(letter)
    return BulkResult(verb, done, gone, unmatched, tuple(acted))
