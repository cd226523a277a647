"""Finding events in the ledger fast enough for a page, however big the ledger.

The ledger's index is one sorted set, `<prefix>:events`: record keys scored by receipt time.
A search walks it newest first from a cursor, in chunks:
- an event id is a direct lookup of its record (one per source), of exactly the id given:
  ids are printable text, spaces included, so `evt_1` and ` evt_1 ` are two events. Only
  when the exact id finds nothing is the id without its surrounding whitespace tried (a
  pasted id with a trailing newline), and the page says so;
- a time range bounds the walk, and a page stops it (PAGE rows, or the page size asked);
- a source filter reads the source from the record key, without reading the record;
- type and status are in the record: those filters read records, at most SCAN_BUDGET per
  page, and the page then offers to go on from where it stopped.
So a page costs about the same with a thousand records or a million.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import cast

from redis import Redis

from app.formats import text
from app.jobstate import EventStatus
from workers.ops.ledger import EventLedger, LedgerRecord

PAGE = 50
CHUNK = 500
# Records read per page when a filter needs them (type, status); record keys examined per
# page when only the source filters (it is in the key).
SCAN_BUDGET = 5_000
KEY_BUDGET = 50_000


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where the previous page stopped: the last index entry it examined."""

    score: float
    member: str

    def encode(self) -> str:
        return f"{self.score!r}:{self.member}"

    @classmethod
    def decode(cls, value: str) -> Cursor | None:
        """None for anything this page did not write (a NaN or infinite score included)."""
        score, colon, member = value.partition(":")
        try:
            position = float(score)
        except ValueError:
            return None
        return cls(position, member) if colon and member and math.isfinite(position) else None


@dataclass(frozen=True, slots=True)
class Query:
    source: str | None = None
    event_id: str | None = None
    type: str | None = None
    status: EventStatus | None = None
    since: float | None = None
    until: float | None = None
    after: Cursor | None = None  # continue below this entry (older)
    limit: int | None = None  # rows per page; None: PAGE
    # Only the events of one bulk requeue (`requeued.py`): its token, checked by the form.
    requeued: str | None = None

    @property
    def size(self) -> int:
        return self.limit or PAGE

    @property
    def reads_records(self) -> bool:
        return self.type is not None or self.status is not None

    def matches(self, status: str, event_type: str) -> bool:
        if self.status is not None and status != self.status:
            return False
        if self.type is None:
            return True
        if self.type.endswith("*"):
            return event_type.startswith(self.type[:-1])
        return event_type == self.type


@dataclass(slots=True)
class Page:
    rows: list[LedgerRecord] = field(default_factory=list)
    more: Cursor | None = None  # where the next page starts; None: nothing older
    examined: int = 0
    # The receipt time the walk reached: a budget-limited page says how far back it looked.
    reached: float | None = None
    budget_spent: bool = False
    in_range: int | None = None  # events in the time range, when nothing else filters
    # Nothing had exactly the id given: these rows are of the id without the whitespace
    # around it, and the page must say so.
    stripped_id: bool = False


class EventSearch:
    def __init__(self, ledger: EventLedger, sources: list[str], share: int = 1) -> None:
        """`share`: of the page's budget, this search's part (the front of a cluster's
        dashboard searches every shard for one page: each spends 1/share of it)."""
        self.ledger = ledger
        self.connection: Redis = ledger.connection
        self.sources = sources
        self.share = share

    def run(self, query: Query) -> Page:
        if query.event_id:
            return self._by_id(query)
        page = self._walk(query)
        if not query.reads_records and query.source is None:
            low = query.since if query.since is not None else "-inf"
            high = query.until if query.until is not None else "+inf"
            page.in_range = int(self.connection.zcount(self._index(query), low, high))
        return page

    def _index(self, query: Query) -> str:
        """The sorted set walked: the ledger's index, or one bulk requeue's events, which
        holds the same members scored the same way."""
        keys = self.ledger.keys
        return keys.requeued(query.requeued) if query.requeued else keys.events

    def _by_id(self, query: Query) -> Page:
        assert query.event_id is not None
        page = self._lookup(query, query.event_id)
        stripped = query.event_id.strip()
        if not page.rows and stripped and stripped != query.event_id:
            fallback = self._lookup(query, stripped)
            fallback.examined += page.examined
            fallback.stripped_id = bool(fallback.rows)
            return fallback
        return page

    def _lookup(self, query: Query, event_id: str) -> Page:
        sources = [query.source] if query.source else self.sources
        keys = [self.ledger.keys.event(source, event_id) for source in sources]
        if query.requeued:
            index = self._index(query)
            keys = [k for k in keys if self.connection.zscore(index, k) is not None]
        found = [
            r
            for r in self.ledger.summaries(keys)
            if r is not None and query.matches(str(r.status), r.type)
        ]
        return Page(rows=found, examined=len(keys))

    def _walk(self, query: Query) -> Page:
        page = Page()
        budget = (SCAN_BUDGET if query.reads_records else KEY_BUDGET) // self.share
        cursor = query.after
        candidates: list[tuple[str, float]] = []
        while len(page.rows) < query.size:
            chunk = self._chunk(query, cursor)
            if not chunk:
                page.more = None
                return page
            for member, score in chunk:
                names = self.ledger.source_and_id(member)
                if names is not None and (query.source is None or names[0] == query.source):
                    candidates.append((member, score))
            page.examined += len(chunk)
            cursor = Cursor(chunk[-1][1], chunk[-1][0])
            page.reached = cursor.score
            self._take(query, candidates, page)
            candidates = []
            if len(page.rows) >= query.size:
                break
            if len(chunk) < CHUNK:
                page.more = None
                return page
            if page.examined >= budget:
                page.budget_spent = True
                break
        page.more = page.more or cursor
        return page

    def _take(self, query: Query, candidates: list[tuple[str, float]], page: Page) -> None:
        """Keep the candidates that match, reading the whole record only of those shown: a
        filter on type or status reads just those two fields of each candidate. A full
        page's cursor is its last row, so the next page starts right after it."""
        if query.reads_records:
            matching = self._matching(query, candidates)
            candidates = [c for c, ok in zip(candidates, matching, strict=True) if ok]
        done = 0
        while done < len(candidates) and len(page.rows) < query.size:
            part = candidates[done : done + query.size - len(page.rows)]
            done += len(part)
            records = self.ledger.summaries([member for member, _ in part])
            for (member, score), record in zip(part, records, strict=True):
                if record is None:
                    continue  # expired since it was indexed
                page.rows.append(record)
                if len(page.rows) == query.size:
                    page.more = Cursor(score, member)
                    page.reached = score
                    return

    def _matching(self, query: Query, candidates: list[tuple[str, float]]) -> list[bool]:
        with self.connection.pipeline(transaction=False) as pipe:
            for member, _ in candidates:
                pipe.hmget(member, "status", "type")
            replies = pipe.execute() if candidates else []
        return [
            status is not None and query.matches(text(status), text(kind or b""))
            for status, kind in replies
        ]

    def _chunk(self, query: Query, cursor: Cursor | None) -> list[tuple[str, float]]:
        """The next CHUNK index entries, newest first, strictly older than the cursor (ties
        in score are ordered by member, as Redis orders them)."""
        key = self._index(query)
        low = query.since if query.since is not None else "-inf"
        high: float | str = query.until if query.until is not None else "+inf"
        skip = 0
        if cursor is not None:
            high = cursor.score
            tied = cast(list[bytes], self.connection.zrevrangebyscore(key, high, high))
            skip = sum(1 for member in tied if text(member) >= cursor.member)
        entries = cast(
            list[tuple[bytes, float]],
            self.connection.zrevrangebyscore(
                key, high, low, start=skip, num=CHUNK, withscores=True
            ),
        )
        return [(text(member), float(score)) for member, score in entries]
