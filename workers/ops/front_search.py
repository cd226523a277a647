"""The Events search over every shard of a cluster, on the dashboard's front.

Each shard's ledger is searched as its own Events page searches it (`events_page/search.py`:
a walk of its index from a cursor, bounded however big the ledger), all shards at once; the
newest rows of all are shown, each linking to the event's page in its shard. The next page
starts, in each shard, right after the last row of that shard shown (or where its walk
stopped): the cursor is one per shard, carried in `at`. A shard that does not answer is
named, and the others' rows are shown.
"""

from __future__ import annotations

import base64
import json
import math
from dataclasses import dataclass, field, replace
from urllib.parse import urlencode

from markupsafe import escape
from redis import Redis
from werkzeug.datastructures import MultiDict

from app.formats import iso
from app.keys import Keys
from app.settings import Settings
from app.shards import Shards
from workers.ops.events_page.search import Cursor, EventSearch, Page, Query
from workers.ops.events_page.search_form import carried, form_of
from workers.ops.ledger import EventLedger, LedgerRecord
from workers.ops.shard_reads import read_each

# A shard whose walk reached its end: nothing older there.
DONE = "done"


@dataclass(frozen=True, slots=True)
class Found:
    shard: int
    record: LedgerRecord
    position: Cursor  # its entry in its shard's index


@dataclass
class Merged:
    rows: list[Found] = field(default_factory=list)
    down: list[tuple[int, str]] = field(default_factory=list)
    next_at: dict[int, Cursor | str] | None = None  # None: nothing older anywhere
    stripped: bool = False
    # A walk stopped on its budget: how far back every shard was looked through, and how
    # many index entries were.
    stopped: float | None = None
    examined: int = 0


def decode_at(value: str) -> dict[int, Cursor | str]:
    """The cursors `encode_at` wrote; anything else (a hand-edited link) starts afresh."""
    try:
        raw = json.loads(base64.urlsafe_b64decode(value.encode()).decode())
        found: dict[int, Cursor | str] = {}
        for shard, where in raw.items():
            if where == DONE:
                found[int(shard)] = DONE
            elif isinstance(where[0], float | int) and math.isfinite(where[0]):
                found[int(shard)] = Cursor(float(where[0]), str(where[1]))
        return found
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return {}


def encode_at(at: dict[int, Cursor | str]) -> str:
    plain = {str(s): (c if isinstance(c, str) else [c.score, c.member]) for s, c in at.items()}
    return base64.urlsafe_b64encode(json.dumps(plain).encode()).decode()


def search(settings: Settings, shards: Shards, query: Query, at: dict[int, Cursor | str]) -> Merged:
    sources = list(settings.sources)
    wanted = [s for s in shards if at.get(s) != DONE]

    def one(shard: int, client: Redis, keys: Keys) -> Page:
        cursor = at.get(shard)
        mine = replace(query, after=cursor if isinstance(cursor, Cursor) else None)
        # The page's budget shared: as many records read as one Redis's page reads.
        return EventSearch(EventLedger(keys, client), sources, shards.count).run(mine)

    pages = read_each(settings, shards, one, wanted)
    merged = Merged()
    candidates: list[Found] = []
    for shard, found in pages.items():
        if isinstance(found, str):
            merged.down.append((shard, found))
            continue
        merged.stripped |= found.stripped_id
        keys = settings.keys.sharded(shards.tag(shard))
        for record in found.rows:
            position = Cursor(record.received_at, keys.event(record.source, record.id))
            candidates.append(Found(shard, record, position))
    # A shard whose walk stopped on its budget has not looked below where it stopped: rows
    # of other shards older than that wait for the next page, or the order would break.
    stops = [p.more for p in pages.values() if isinstance(p, Page) and p.budget_spent and p.more]
    if stops:
        frontier = max(stops, key=lambda c: (c.score, c.member))
        merged.stopped = frontier.score
        ahead = (frontier.score, frontier.member)
        candidates = [f for f in candidates if (f.position.score, f.position.member) >= ahead]
        merged.examined = sum(p.examined for p in pages.values() if isinstance(p, Page))
    candidates.sort(key=lambda f: (f.position.score, f.position.member), reverse=True)
    merged.rows = candidates[: query.size]
    if not query.event_id:
        merged.next_at = _next_at(merged.rows, pages, at, shards)
    return merged


def _next_at(
    shown: list[Found], pages: dict[int, Page | str], at: dict[int, Cursor | str], shards: Shards
) -> dict[int, Cursor | str] | None:
    """Where each shard's next page starts; a shard left out starts from its newest (it
    had rows, none shown yet). None when every shard reached its end."""
    following: dict[int, Cursor | str] = {}
    for shard in shards:
        found = pages.get(shard)
        if found is None or isinstance(found, str):  # done before, or did not answer
            if shard in at:
                following[shard] = at[shard]
            continue
        mine = [f for f in shown if f.shard == shard]
        if len(mine) < len(found.rows):  # some of its rows wait for the next page
            if mine:
                following[shard] = mine[-1].position
            elif shard in at:
                following[shard] = at[shard]
        else:
            following[shard] = found.more if found.more is not None else DONE
    ended = all(following.get(shard) == DONE for shard in shards)
    return None if ended else following


def results(
    settings: Settings, shards: Shards, args: MultiDict[str, str], query: Query, errors: list[str]
) -> str:
    """The search's form and its rows, newest first, from every shard."""
    at = decode_at(args.get("at", ""))
    merged = search(settings, shards, query, at) if not errors else Merged()
    form = form_of(args)
    kept = carried(form)
    rows = "".join(_row(found) for found in merged.rows)
    older = ""
    if merged.next_at:
        link = "/events?" + urlencode({**kept, "at": encode_at(merged.next_at)})
        older = f'<p><a id="older" href="{escape(link)}">older &rarr;</a></p>'
    said = "".join(f"<li>shard {shard}: {escape(line)}</li>" for shard, line in merged.down)
    count = len(merged.rows)
    body = _form(form, list(settings.sources)) + "".join(
        f"<p class='error'>{escape(e)}</p>" for e in errors
    )
    if merged.down:
        body += f"<p>Not searched (did not answer):</p><ul>{said}</ul>"
    if merged.stopped is not None:
        body += (
            f"<p id='bounded'>Looked through {merged.examined} events, back to "
            f"{escape(iso(merged.stopped))} in every shard; older ones may match too "
            "(older &rarr;, below).</p>"
        )
    if merged.stripped:
        body += "<p>No event has exactly that id; shown: the id without the spaces around it.</p>"
    return body + (
        f"<p>{count} event{'' if count == 1 else 's'} shown, newest first, from every shard.</p>"
        "<table><tr><th>received</th><th>shard</th><th>source</th><th>status</th>"
        "<th>tries</th><th>type</th><th>event id</th><th>last error</th></tr>"
        f"{rows}</table>{older}"
    )


def _form(form: dict[str, str], sources: list[str]) -> str:
    """The search's fields, as the Events page names them (`search_form.py`)."""
    choices = "".join(
        f"<option{' selected' if form['source'] == name else ''}>{escape(name)}</option>"
        for name in sources
    )
    fields = "".join(
        f'<label>{label} <input name="{name}" value="{escape(form[name])}" size="16"></label> '
        for name, label in (
            ("id", "event id"),
            ("type", "type"),
            ("status", "status"),
            ("since", "since"),
            ("until", "until"),
        )
    )
    return (
        '<form id="search" method="get" action="/events"><label>source <select name="source">'
        f'<option value="">every source</option>{choices}</select></label> {fields}'
        '<button type="submit">Search</button></form>'
    )


def _row(found: Found) -> str:
    r = found.record
    link = f"/shards/{found.shard}/events/event?" + urlencode({"source": r.source, "id": r.id})
    return (
        f"<tr><td>{escape(iso(r.received_at))}</td><td>{found.shard}</td>"
        f"<td>{escape(r.source)}</td><td>{escape(str(r.status))}</td><td>{r.attempts}</td>"
        f'<td>{escape(r.type or "-")}</td><td><a href="{escape(link)}">{escape(r.id)}</a></td>'
        f"<td>{escape((r.last_error or '-')[:200])}</td></tr>"
    )
